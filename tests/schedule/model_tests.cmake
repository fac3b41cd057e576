# model tests (added by the model work)
