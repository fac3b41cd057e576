# IR tests
