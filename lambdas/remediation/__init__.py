"""Domain code shared by the train, monitor and plan Lambdas."""
