# host backend tests
