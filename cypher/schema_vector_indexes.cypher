// The vector indexes and the dimension each was created with.
SHOW VECTOR INDEXES YIELD name, options
RETURN name, toInteger(options.indexConfig['vector.dimensions']) AS dimensions
