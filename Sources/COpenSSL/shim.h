#ifndef PROXIMA_COPENSSL_SHIM_H
#define PROXIMA_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/err.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/kdf.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/crypto.h>
#include <openssl/ssl.h>

/// OpenSSL 3 turned EVP_MD_CTX_size into a macro Swift cannot import.
static inline int COpenSSL_EVP_MD_CTX_size(const EVP_MD_CTX *c) { return EVP_MD_get_size(EVP_MD_CTX_get0_md(c)); }

/// EVP_PKEY_fromdata selections: OR-ed macros of other macros, which Swift does not import.
static inline int COpenSSL_EVP_PKEY_PUBLIC_KEY(void) { return EVP_PKEY_PUBLIC_KEY; }
static inline int COpenSSL_EVP_PKEY_KEYPAIR(void) { return EVP_PKEY_KEYPAIR; }

/// X509_NAME_print_ex flags for RFC 2253 names: an OR of macros Swift does not import.
static inline unsigned long COpenSSL_XN_FLAG_RFC2253(void) { return XN_FLAG_RFC2253; }
/// SSL_CTX_set_min/max_proto_version and SSL_set_tlsext_host_name are macros over SSL_CTX_ctrl / SSL_ctrl.
static inline int COpenSSL_SSL_CTX_set_tls13_only(SSL_CTX *c) {
    return (int)(SSL_CTX_set_min_proto_version(c, TLS1_3_VERSION) && SSL_CTX_set_max_proto_version(c, TLS1_3_VERSION));
}
/// Partial writes, and a retried write whose buffer moved (a Swift array may): SSL_CTX_set_mode is a macro.
static inline void COpenSSL_SSL_CTX_set_stream_modes(SSL_CTX *c) {
    SSL_CTX_set_mode(c, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}
static inline int COpenSSL_SSL_set_host_name(SSL *s, const char *name) { return (int)SSL_set_tlsext_host_name(s, name); }
#endif
