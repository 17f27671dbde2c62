# SPDX-License-Identifier: GPL-2.0-or-later
# bash completion for pmallocctl(8)        -*- shell-script -*-
# Installed by make install into bash-completion's completions directory.

_pmallocctl()
{
	local cur prev words cword
	_init_completion || return

	local commands="check status violations learn exercise propose ready learn-flush sites protect preload"
	local cmd="" i
	for ((i = 1; i < cword; i++)); do
		case ${words[i]} in
		-*) ;;
		*) cmd=${words[i]}; break ;;
		esac
	done

	if [[ -z $cmd ]]; then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--help --version" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$commands" -- "$cur"))
		fi
		return
	fi

	if [[ $cmd == violations ]]; then
		case $prev in
		--output | -o) COMPREPLY=($(compgen -W "short json json-pretty cat" -- "$cur")); return ;;
		--unit | -u)
			COMPREPLY=($(compgen -W "$(systemctl list-units --all --type=service --no-legend --plain 2>/dev/null |
				command awk '{ print $1 }')" -- "$cur")); return ;;
		--cursor | -c | --after-cursor) return ;;
		esac
	fi
	case $prev in
	--socket) _filedir; return ;;
	--config | --file | --output | -o) _filedir; return ;;
	--exe | -e) _filedir; return ;;
	--directory | -D | --root) _filedir -d; return ;;
	--library) _filedir so; return ;;
	--pid | -p) COMPREPLY=($(compgen -W "$(command ls /proc | command grep -E '^[0-9]+$')" -- "$cur")); return ;;
	--since | -S | --until | -U)
		COMPREPLY=($(compgen -W "today yesterday now -1h -10min -1d" -- "$cur")); return ;;
	--policy | -P | -n | --lines) return ;;
	--mode | -m) COMPREPLY=($(compgen -W "audit enforce" -- "$cur")); return ;;
	--min-time | -t) COMPREPLY=($(compgen -W "0 1h 24h 7d" -- "$cur")); return ;;
	--unit) COMPREPLY=($(compgen -W "$(systemctl list-unit-files --type=service --no-legend \
		--no-pager 2>/dev/null | command awk '{print $1}')" -- "$cur")); return ;;
	esac

	case $cmd in
	check)
		[[ $cur == -* ]] && COMPREPLY=($(compgen -W "--help" -- "$cur")) || _filedir conf
		;;
	status)
		COMPREPLY=($(compgen -W "--socket --json --pid --help" -- "$cur"))
		;;
	violations)
		COMPREPLY=($(compgen -W "--pid --unit --policy --since --until --lines --reverse --cursor
			--after-cursor --show-cursor --follow --output --json --full --no-full --no-pager
			--directory --file --help" -- "$cur"))
		;;
	learn-flush | sites)
		[[ $cur == -* ]] && COMPREPLY=($(compgen -W "--socket --help" -- "$cur"))
		;;
	learn)
		COMPREPLY=($(compgen -W "--exe --output --help" -- "$cur"))
		;;
	propose)
		COMPREPLY=($(compgen -W "--exe --mode --run --since --uid --unit --directory --file --output --help" -- "$cur"))
		;;
	exercise)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--reload --respawn --stop --help" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$(systemctl list-units --type=service --state=running --no-legend \
				--plain 2>/dev/null | command awk '{print $1}')" -- "$cur"))
		fi
		;;
	ready)
		COMPREPLY=($(compgen -W "--exe --config --min-time --since --json --help" -- "$cur"))
		;;
	protect)
		[[ $cur == -* ]] && COMPREPLY=($(compgen -W "--socket --help" -- "$cur"))
		;;
	preload)
		local action="" unit=""
		for ((i = i + 1; i < cword; i++)); do
			case ${words[i]} in
			--root | --library) ((i++)) ;;
			-*) ;;
			*) if [[ -z $action ]]; then action=${words[i]}; else unit=${words[i]}; fi ;;
			esac
		done
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--root --library --help" -- "$cur"))
		elif [[ -z $action ]]; then
			COMPREPLY=($(compgen -W "enable disable status" -- "$cur"))
		elif [[ -z $unit ]]; then
			COMPREPLY=($(compgen -W "$(systemctl list-unit-files --type=service --no-legend \
				--no-pager 2>/dev/null | command awk '{print $1}')" -- "$cur"))
		fi
		;;
	esac
} && complete -F _pmallocctl pmallocctl
