// OpenSSL-backed crypto.
