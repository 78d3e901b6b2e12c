"""The debugger's shared vocabulary, which every other sub-package uses and which imports none of them: modes,
collections, save and reduction configurations, the parsed hook and rule configuration, smdebug's exceptions."""
