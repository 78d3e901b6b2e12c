"""The few ``smdebug.core`` modules scripts import by path (modes, collection keys, step states)."""
