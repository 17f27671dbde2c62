# SPDX-License-Identifier: GPL-2.0-or-later
# bash completion for pmallocd(8)        -*- shell-script -*-
# Installed by make install into bash-completion's completions directory.

_pmallocd()
{
	local cur prev words cword
	_init_completion || return

	case $prev in
	--config) _filedir conf; return ;;
	--socket) _filedir; return ;;
	esac
	COMPREPLY=($(compgen -W "--config --socket --check --help --version" -- "$cur"))
} && complete -F _pmallocd pmallocd
