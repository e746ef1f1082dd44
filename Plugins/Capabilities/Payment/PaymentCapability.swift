// EMV contactless payment capability.
