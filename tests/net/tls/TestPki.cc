#include "tests/net/tls/TestPki.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <stdexcept>

namespace libnet::test {

namespace {

struct KeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct CertFree {
  void operator()(X509* p) const { X509_free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("TestPki: ") + what + " failed");
}

Key newKey() {
  Key key(EVP_EC_gen("P-256"));
  check(key != nullptr, "EVP_EC_gen");
  return key;
}

void addExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  check(ext != nullptr, "X509V3_EXT_conf_nid");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A certificate for `key` named `commonName`, signed by `issuerKey` as
// `issuer` (itself when null: a self-signed CA).
Cert newCert(EVP_PKEY* key, const char* commonName, X509* issuer, EVP_PKEY* issuerKey,
             const char* altNames, bool ca, long serial) {
  Cert cert(X509_new());
  check(cert != nullptr, "X509_new");
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -24 * 3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 7 * 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(commonName), -1, -1, 0);
  X509* signer = issuer ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  addExtension(cert.get(), signer, NID_basic_constraints, ca ? "critical,CA:TRUE" : "CA:FALSE");
  if (ca) addExtension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  if (altNames) addExtension(cert.get(), signer, NID_subject_alt_name, altNames);
  check(X509_sign(cert.get(), issuerKey ? issuerKey : key, EVP_sha256()) > 0, "X509_sign");
  return cert;
}

void writePem(const std::string& path, X509* cert, EVP_PKEY* key) {
  FILE* f = std::fopen(path.c_str(), "w");
  check(f != nullptr, "fopen");
  const bool ok = cert ? PEM_write_X509(f, cert) == 1
                       : PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
  std::fclose(f);
  check(ok, "PEM_write");
}

const char* const kFiles[] = {"ca.pem",     "server.pem", "server.key",
                              "client.pem", "client.key", "other-ca.pem"};

}  // namespace

void TestPki::writeTo(const std::string& dir) {
  const Key caKey = newKey();
  const Cert ca = newCert(caKey.get(), "libnet test CA", nullptr, nullptr, nullptr, true, 1);
  const Key serverKey = newKey();
  const Cert server = newCert(serverKey.get(), "localhost", ca.get(), caKey.get(),
                              "IP:127.0.0.1,IP:::1,DNS:localhost", false, 2);
  const Key clientKey = newKey();
  const Cert client =
      newCert(clientKey.get(), "libnet test client", ca.get(), caKey.get(), nullptr, false, 3);
  const Key otherKey = newKey();
  const Cert other = newCert(otherKey.get(), "some other CA", nullptr, nullptr, nullptr, true, 4);
  writePem(dir + "/ca.pem", ca.get(), nullptr);
  writePem(dir + "/server.pem", server.get(), nullptr);
  writePem(dir + "/server.key", nullptr, serverKey.get());
  writePem(dir + "/client.pem", client.get(), nullptr);
  writePem(dir + "/client.key", nullptr, clientKey.get());
  writePem(dir + "/other-ca.pem", other.get(), nullptr);
}

TestPki::TestPki() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string pattern = std::string(base ? base : "/tmp") + "/libnet-pki-XXXXXX";
  check(::mkdtemp(pattern.data()) != nullptr, "mkdtemp");
  dir_ = pattern;
  writeTo(dir_);
}

TestPki::~TestPki() {
  for (const char* file : kFiles) ::unlink((dir_ + "/" + file).c_str());
  ::rmdir(dir_.c_str());
}

}  // namespace libnet::test
