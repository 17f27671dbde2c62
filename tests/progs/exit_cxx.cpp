// SPDX-License-Identifier: GPL-2.0-or-later
//
// exit_cxx - a C++ program whose static objects' destructors write what
// their constructors built before main: a registry of names made with
// malloc() in make_registry(), a std::string and a std::map beside it.
// main() listens (the policy's trigger: the registry is read-only from
// then on) and returns; the destructors then write the registry, as C++
// programs do.  Prints "destroyed N" from the registry's destructor.
// Knows nothing of pmalloc.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <netinet/in.h>
#include <sys/socket.h>

extern "C" __attribute__((noinline)) char *make_registry(size_t n)
{
	char *p = static_cast<char *>(malloc(n));
	if (!p)
		abort();
	memset(p, 'x', n);
	return p;
}

struct Registry {
	char *names;
	int count;
	std::string label;
	std::map<int, std::string> index;
	Registry() : names(make_registry(256)), count(3), label("registry of start-up names")
	{
		index[1] = "one";
		index[2] = "two";
	}
	~Registry()
	{
		// The write the destructor makes into start-up memory.
		volatile char *v = names;
		v[0] = '\0';
		count = 0;
		std::printf("destroyed %d\n", count);
		std::fflush(stdout);
	}
};

static Registry registry;

int main()
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {};
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, reinterpret_cast<struct sockaddr *>(&sa), sizeof(sa)) < 0 || listen(fd, 8) < 0) {
		std::perror("listen");
		return 2;
	}
	std::printf("listening %s\n", registry.label.c_str());
	std::fflush(stdout);
	return 0;
}
