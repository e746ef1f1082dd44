// PC/SC transport.
