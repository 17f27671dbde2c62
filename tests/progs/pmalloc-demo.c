/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pmalloc-demo - a small "server" written with no knowledge of pmalloc:
 * a static parse_config() builds its configuration with an xmalloc()
 * wrapper and strdup(), load_settings() adds a table with malloc(), then
 * it listen()s.  Run under the shim with a policy naming those functions,
 * its configuration becomes read-only at listen().
 *
 *   pmalloc-demo            serve one round and exit 0
 *   pmalloc-demo attack     then overwrite the admin name, as a heap
 *                           corruption bug would (dies by SIGSEGV when hardened)
 *   pmalloc-demo attack-table | attack-struct   other objects, same story
 *   pmalloc-demo before     write to the configuration before listen (allowed)
 *   pmalloc-demo serve      a service: serve until SIGTERM (exit 0); SIGUSR1
 *                           is the bug: "attack" then, as the signal comes
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct config {
	char *admin;
	char *listen_addr;
	int port;
	int *table;
	size_t table_len;
};

static void *xmalloc(size_t n)
{
	void *p = malloc(n);
	if (!p) {
		perror("malloc");
		exit(1);
	}
	return p;
}

static char *xstrdup(const char *s)
{
	char *p = strdup(s);
	if (!p) {
		perror("strdup");
		exit(1);
	}
	return p;
}

static struct config *parse_config(const char *text)
{
	struct config *c = xmalloc(sizeof(*c));
	char key[32], value[64];
	memset(c, 0, sizeof(*c));
	while (sscanf(text, "%31[^=]=%63[^;];", key, value) == 2) {
		if (strcmp(key, "admin") == 0)
			c->admin = xstrdup(value);
		else if (strcmp(key, "listen") == 0)
			c->listen_addr = strdup(value);
		else if (strcmp(key, "port") == 0)
			c->port = atoi(value);
		text = strchr(text, ';') + 1;
	}
	return c;
}

static void load_settings(struct config *c)
{
	c->table_len = 64;
	c->table = malloc(c->table_len * sizeof(*c->table));
	for (size_t i = 0; i < c->table_len; i++)
		c->table[i] = (int)i * 7;
}

/* Marked so the compiler keeps the "bug" even though nothing reads it back. */
static void corrupt(volatile char *where, char what)
{
	*where = what;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	sigset_t waited;

	/* serve: both signals wait for sigwait, from the start on. */
	sigemptyset(&waited);
	sigaddset(&waited, SIGUSR1);
	sigaddset(&waited, SIGTERM);
	if (strcmp(mode, "serve") == 0)
		sigprocmask(SIG_BLOCK, &waited, NULL);
	struct config *c = parse_config("admin=alice;listen=127.0.0.1;port=0;");
	load_settings(c);
	if (strcmp(mode, "before") == 0)
		c->admin[0] = 'A';               /* still initialising: allowed */

	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)c->port) };
	inet_pton(AF_INET, c->listen_addr, &sa.sin_addr);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 8) < 0) {
		perror("listen");
		return 1;
	}
	printf("pmalloc-demo: serving as admin \"%s\" on %s, table[3]=%d\n", c->admin, c->listen_addr,
	       c->table[3]);
	fflush(stdout);

	/* After initialisation: ordinary allocations keep working. */
	char *request = malloc(128);
	snprintf(request, 128, "GET /status for %s", c->admin);
	free(request);

	if (strcmp(mode, "serve") == 0) {
		int sig = 0;
		while (sigwait(&waited, &sig) != 0)
			;
		if (sig == SIGUSR1)
			mode = "attack";
	}
	if (strcmp(mode, "attack") == 0) {
		printf("pmalloc-demo: simulating a heap overflow into the admin name...\n");
		fflush(stdout);
		corrupt(c->admin, 'm');
	} else if (strcmp(mode, "attack-table") == 0) {
		corrupt((char *)&c->table[5], 1);
	} else if (strcmp(mode, "attack-struct") == 0) {
		corrupt((char *)&c->port, 1);
	}
	printf("pmalloc-demo: admin is now \"%s\"; exiting normally\n", c->admin);
	free(c->admin);
	free(c->listen_addr);
	free(c->table);
	free(c);
	close(fd);
	return 0;
}
