/*
 * shim_wire.c - libFuzzer harness for the shim's checks on what pmallocd
 * sends it (shim/client_decode.c), and what the shim does next with a
 * policy it was handed: parse it (shim/policy.c), as init.c does.
 *
 * Input: one packet, taken both as the handshake answer and as a protect
 * order.  Besides memory errors, it checks the decoder's contract: a policy
 * text lies inside the packet and ends with its NUL; a refusal reason and
 * an order's pool name are NUL-terminated within their arrays.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client_decode.h"
#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void answer(const uint8_t *data, size_t size)
{
	struct client_answer a;
	struct policy_set *set = NULL;
	char err[POLICY_ERR_MAX];
	char *buf;
	int r;

	/* client_wait() receives at most PMW_MAX_MSG + 1 bytes. */
	if (size > PMW_MAX_MSG + 1)
		return;
	buf = malloc(size ? size : 1);
	if (!buf)
		return;
	memcpy(buf, data, size);
	r = client_decode_answer(buf, size, &a);
	if (r == 1) {
		if (a.text < buf || a.text_len == 0 || a.text + a.text_len > buf + size ||
		    a.text[a.text_len - 1] != '\0')
			abort();
		if (policy_set_load_string(a.text, "pmallocd", &set, err, sizeof(err)) == 0)
			policy_set_free(set);
	} else if (r == -EPROTONOSUPPORT) {
		if (!memchr(a.reason, '\0', sizeof(a.reason)))
			abort();
	} else if (r != 0 && r != -EPROTO) {
		abort();
	}
	free(buf);
}

static void order(const uint8_t *data, size_t size)
{
	struct pmw_protect m;
	const char *pool;

	/* recv(..., sizeof(m), MSG_TRUNC): size may exceed what m holds. */
	memset(&m, 0xa5, sizeof(m));
	memcpy(&m, data, size < sizeof(m) ? size : sizeof(m));
	pool = client_decode_order(&m, size);
	if (pool && (pool != m.pool || !memchr(m.pool, '\0', sizeof(m.pool))))
		abort();
	/* A sites request is never also an order, and has its exact size. */
	if (client_decode_sites_req(&m, size) && (pool || size != sizeof(struct pmw_sites_req)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	answer(data, size);
	order(data, size);
	return 0;
}
