// Simulator transport.
