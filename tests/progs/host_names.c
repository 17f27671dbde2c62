/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * host_names - a program that defines and exports (-rdynamic, as nginx and
 * lighttpd are built) every name the shim might otherwise bind to in its
 * host: each function of libconfig and of the unwinder (libgcc_eh) that the
 * shim carries a private copy of.  lighttpd exports a config_init of its
 * own; before the shim hid its copies, the shim's calls landed in it.
 *
 * Each definition here, if ever called, names itself on stderr and aborts
 * (exit 134): the shim must call its own copies only.  The list is checked
 * by tests/integration/host_symbols.sh against what the shim is built from,
 * so a name the shim starts to use fails the test until it is added here.
 *
 *   host_names          allocate at load_secret (the site the test's policy
 *                       names), listen once (its trigger), print
 *                       "protected N" (1, 0, -1 without the shim)
 *   host_names write    then write the secret (dies by SIGSEGV when
 *                       protected; the shim's report walks the stack)
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prog.h"

#define HOST_NAMES(X) \
	X(_Unwind_Backtrace) \
	X(_Unwind_DeleteException) \
	X(_Unwind_FindEnclosingFunction) \
	X(_Unwind_Find_FDE) \
	X(_Unwind_ForcedUnwind) \
	X(_Unwind_GetCFA) \
	X(_Unwind_GetDataRelBase) \
	X(_Unwind_GetGR) \
	X(_Unwind_GetIP) \
	X(_Unwind_GetIPInfo) \
	X(_Unwind_GetLanguageSpecificData) \
	X(_Unwind_GetRegionStart) \
	X(_Unwind_GetTextRelBase) \
	X(_Unwind_RaiseException) \
	X(_Unwind_Resume) \
	X(_Unwind_Resume_or_Rethrow) \
	X(_Unwind_SetGR) \
	X(_Unwind_SetIP) \
	X(__deregister_frame) \
	X(__deregister_frame_info) \
	X(__deregister_frame_info_bases) \
	X(__frame_state_for) \
	X(__register_frame) \
	X(__register_frame_info) \
	X(__register_frame_info_bases) \
	X(__register_frame_info_table) \
	X(__register_frame_info_table_bases) \
	X(__register_frame_table) \
	X(config_destroy) \
	X(config_get_auto_convert) \
	X(config_get_options) \
	X(config_init) \
	X(config_lookup) \
	X(config_lookup_bool) \
	X(config_lookup_float) \
	X(config_lookup_int) \
	X(config_lookup_int64) \
	X(config_lookup_string) \
	X(config_read) \
	X(config_read_file) \
	X(config_read_string) \
	X(config_set_auto_convert) \
	X(config_set_destructor) \
	X(config_set_include_dir) \
	X(config_set_options) \
	X(config_setting_add) \
	X(config_setting_get_bool) \
	X(config_setting_get_bool_elem) \
	X(config_setting_get_elem) \
	X(config_setting_get_float) \
	X(config_setting_get_float_elem) \
	X(config_setting_get_format) \
	X(config_setting_get_int) \
	X(config_setting_get_int64) \
	X(config_setting_get_int64_elem) \
	X(config_setting_get_int_elem) \
	X(config_setting_get_member) \
	X(config_setting_get_string) \
	X(config_setting_get_string_elem) \
	X(config_setting_index) \
	X(config_setting_length) \
	X(config_setting_lookup) \
	X(config_setting_lookup_bool) \
	X(config_setting_lookup_float) \
	X(config_setting_lookup_int) \
	X(config_setting_lookup_int64) \
	X(config_setting_lookup_string) \
	X(config_setting_remove) \
	X(config_setting_remove_elem) \
	X(config_setting_set_bool) \
	X(config_setting_set_bool_elem) \
	X(config_setting_set_float) \
	X(config_setting_set_float_elem) \
	X(config_setting_set_format) \
	X(config_setting_set_hook) \
	X(config_setting_set_int) \
	X(config_setting_set_int64) \
	X(config_setting_set_int64_elem) \
	X(config_setting_set_int_elem) \
	X(config_setting_set_string) \
	X(config_setting_set_string_elem) \
	X(config_write) \
	X(config_write_file) \
	X(libconfig_yy_create_buffer) \
	X(libconfig_yy_delete_buffer) \
	X(libconfig_yy_flush_buffer) \
	X(libconfig_yy_scan_buffer) \
	X(libconfig_yy_scan_bytes) \
	X(libconfig_yy_scan_string) \
	X(libconfig_yy_switch_to_buffer) \
	X(libconfig_yyalloc) \
	X(libconfig_yyerror) \
	X(libconfig_yyfree) \
	X(libconfig_yyget_column) \
	X(libconfig_yyget_debug) \
	X(libconfig_yyget_extra) \
	X(libconfig_yyget_in) \
	X(libconfig_yyget_leng) \
	X(libconfig_yyget_lineno) \
	X(libconfig_yyget_lval) \
	X(libconfig_yyget_out) \
	X(libconfig_yyget_text) \
	X(libconfig_yylex) \
	X(libconfig_yylex_destroy) \
	X(libconfig_yylex_init) \
	X(libconfig_yylex_init_extra) \
	X(libconfig_yyparse) \
	X(libconfig_yypop_buffer_state) \
	X(libconfig_yypush_buffer_state) \
	X(libconfig_yyrealloc) \
	X(libconfig_yyrestart) \
	X(libconfig_yyset_column) \
	X(libconfig_yyset_debug) \
	X(libconfig_yyset_extra) \
	X(libconfig_yyset_in) \
	X(libconfig_yyset_lineno) \
	X(libconfig_yyset_lval) \
	X(libconfig_yyset_out) \
	X(scanctx_cleanup) \
	X(scanctx_current_filename) \
	X(scanctx_init) \
	X(scanctx_pop_include) \
	X(scanctx_push_include) \
	X(scanctx_take_string) \
	X(strbuf_append) \
	X(strbuf_release)

/* The program's definitions: loud if called.  No prototypes in a header:
 * these stand for a program's unrelated functions that share the names. */
static void host_called(const char *name)
{
	static const char pre[] = "host_names: the program's own ";
	static const char post[] = " was called (the shim bound to its host)\n";
	ssize_t r = write(2, pre, sizeof(pre) - 1);
	r += write(2, name, strlen(name));
	r += write(2, post, sizeof(post) - 1);
	(void)r;
	abort();
}

#define DEFINE(name) \
	void name(void); \
	void name(void) \
	{ \
		host_called(#name); \
	}
HOST_NAMES(DEFINE)

static char *__attribute__((noinline)) load_secret(void)
{
	char *s = malloc(64);
	if (s)
		strcpy(s, "a secret the program sets once");
	return s;
}

int main(int argc, char **argv)
{
	char *secret = load_secret();
	if (!secret)
		return 3;
	listen_once();
	printf("protected %d\n", is_protected(secret));
	fflush(stdout);
	if (argc > 1 && strcmp(argv[1], "write") == 0)
		corrupt(secret, 'X');
	printf("done\n");
	return 0;
}
