#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
