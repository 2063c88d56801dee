#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/core_names.h>
#include <openssl/pkcs12.h>
#include <openssl/x509v3.h>
#include <openssl/objects.h>

/* Function-like macros are not imported by Swift: wrap the ones we need. */
static inline void copenssl_free(void *p) { OPENSSL_free(p); }
static inline int copenssl_bn_num_bytes(const BIGNUM *b) { return BN_num_bytes(b); }
static inline long copenssl_ssl_ctx_set_min_proto_version(SSL_CTX *ctx, int v) { return SSL_CTX_set_min_proto_version(ctx, v); }
static inline long copenssl_ssl_ctx_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
static inline long copenssl_ssl_ctx_set_options(SSL_CTX *ctx, unsigned long op) { return SSL_CTX_set_options(ctx, op); }
#endif
