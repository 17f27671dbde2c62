/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * exit_openssl - a program that sets up OpenSSL before it serves: a TLS
 * context, random bytes drawn (the DRBGs built), a digest.  listen() (the
 * policy's trigger) makes what OpenSSL allocated read-only; main then
 * returns, and OpenSSL's atexit clean-up (OPENSSL_cleanup) writes and
 * frees its state.  Prints "ready". Knows nothing of pmalloc.
 */
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <sys/socket.h>

int main(void)
{
	if (OPENSSL_init_ssl(0, NULL) != 1)
		return 2;
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	unsigned char buf[32], md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;
	if (!ctx || RAND_bytes(buf, sizeof(buf)) != 1 ||
	    EVP_Digest(buf, sizeof(buf), md, &md_len, EVP_sha256(), NULL) != 1)
		return 2;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 8) < 0) {
		perror("listen");
		return 2;
	}
	printf("ready %u\n", md_len);
	fflush(stdout);
	return 0;
}
