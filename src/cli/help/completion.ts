import { SHELLS, STATUSES, type CommandModel, type OptionModel } from './command-model.js';

/**
 * Shell completion scripts for bash, zsh and fish, generated from the command model: commands,
 * their options, `--status` values, files where a path goes, and batch names from the store
 * (`splitdance completion --batches`, with the line's --db). A batch name is data: it is
 * inserted quoted and never evaluated by the shell (bash's `compgen -W` would expand it).
 */
const flagsOf = (o: OptionModel) => [o.short, o.long].filter((f): f is string => !!f);
const sq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

export function bashCompletion(commands: CommandModel[]): string {
  const byCommand = commands
    .map((c) => `    ${c.name}) opts=${sq([...c.options.flatMap(flagsOf), '--help'].join(' '))} ;;`)
    .join('\n');
  const valued = [...new Set(commands.flatMap((c) => c.options.filter((o) => o.value).flatMap(flagsOf)))];
  const files = [...new Set(commands.flatMap((c) => c.options.filter((o) => o.completes === 'files').flatMap(flagsOf)))];
  const withFiles = commands.filter((c) => c.fileOperand).map((c) => c.name);
  const withKeys = commands.filter((c) => c.keyOperand).map((c) => c.name);
  // Not `complete -o filenames`: batch names and keys are words, not paths (a folder named like
  // a batch would get a `/`, and bash would quote them a second time); file completion turns
  // it on for itself (compopt).
  return `# bash completion for splitdance: source <(splitdance completion bash)
# A word as typed, its surrounding quotes and backslashes removed (never evaluated).
_splitdance_dequote() {
  local value=$1
  value=\${value#[\\'\\"]}
  value=\${value%[\\'\\"]}
  printf '%s' "\${value//\\\\/}"
}

# The value of the last \`FLAG VALUE\` before the word being completed, dequoted.
_splitdance_flag() {
  local i value=""
  for ((i = 1; i < COMP_CWORD - 1; i++)); do
    [[ \${COMP_WORDS[i]} == "$1" ]] && value=\${COMP_WORDS[i + 1]}
  done
  _splitdance_dequote "$value"
}

_splitdance_files() {
  compopt -o filenames 2>/dev/null
  mapfile -t COMPREPLY < <(compgen -f -- "$1")
}

_splitdance_batches() {
  local db name
  db=$(_splitdance_flag --db)
  while IFS= read -r name; do
    [[ $name == "$1"* ]] && COMPREPLY+=("$(printf '%q' "$name")")
  done < <(splitdance completion --batches \${db:+--db "$db"} 2>/dev/null)
}

# Task keys of the --batch on the line (the most recent batch without one), inserted quoted:
# a key is data, never run.
_splitdance_keys() {
  local db batch key
  db=$(_splitdance_flag --db)
  batch=$(_splitdance_flag --batch)
  while IFS= read -r key; do
    COMPREPLY+=("$(printf '%q' "$key")")
  done < <(splitdance completion --keys "$1" \${batch:+--batch "$batch"} \${db:+--db "$db"} 2>/dev/null)
}

_splitdance() {
  local cur=\${COMP_WORDS[COMP_CWORD]} prev=\${COMP_WORDS[COMP_CWORD - 1]} opts=""
  COMPREPLY=()
  if ((COMP_CWORD == 1)); then
    COMPREPLY=($(compgen -W ${sq([...commands.map((c) => c.name), 'help', '--help', '--version'].join(' '))} -- "$cur"))
    return
  fi
  local cmd=\${COMP_WORDS[1]}
  case $prev in
    --batch) _splitdance_batches "$(_splitdance_dequote "$cur")"; return ;;
    --status) COMPREPLY=($(compgen -W ${sq(STATUSES.join(' '))} -- "$cur")); return ;;
    ${files.join('|')}) _splitdance_files "$cur"; return ;;
    ${valued.filter((f) => !files.includes(f) && f !== '--batch' && f !== '--status').join('|')}) return ;;
  esac
  case $cmd in
${byCommand}
    help) COMPREPLY=($(compgen -W ${sq(commands.map((c) => c.name).join(' '))} -- "$cur")); return ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  elif [[ $cmd == completion ]]; then
    COMPREPLY=($(compgen -W ${sq(SHELLS.join(' '))} -- "$cur"))
  elif [[ ${sq(` ${withFiles.join(' ')} `)} == *" $cmd "* ]]; then
    _splitdance_files "$cur"
  elif [[ ${sq(` ${withKeys.join(' ')} `)} == *" $cmd "* ]]; then
    _splitdance_keys "$(_splitdance_dequote "$cur")"
  fi
}
complete -F _splitdance splitdance
`;
}

/** zsh's _arguments spec of one option: `--batch[the batch]:name:action`. */
function zshSpec(o: OptionModel): string[] {
  const desc = o.description.replace(/[[\]:\\]/g, (c) => `\\${c}`).replace(/'/g, `'\\''`);
  const action = { batches: '_splitdance_batches', statuses: `(${STATUSES.join(' ')})`, files: '_files', shells: `(${SHELLS.join(' ')})`, none: ' ' }[o.completes];
  const value = o.value ? `:${o.value.replace(/[<>[\]]/g, '')}:${action}` : '';
  return flagsOf(o).map((f) => `'${f}[${desc}]${value}'`);
}

export function zshCompletion(commands: CommandModel[]): string {
  const list = commands.map((c) => `    ${sq(`${c.name}:${c.description.replace(/:/g, '\\:')}`)}`).join('\n');
  const cases = commands
    .map((c) => {
      const operand = c.fileOperand ? " '1:source:_files'" : c.keyOperand ? " '1:key:_splitdance_keys'" : c.name === 'completion' ? ` '1:shell:(${SHELLS.join(' ')})'` : '';
      return `    ${c.name}) _arguments -s ${c.options.flatMap(zshSpec).join(' ')}${operand} ;;`;
    })
    .join('\n');
  return `#compdef splitdance
# zsh completion for splitdance: splitdance completion zsh > "\${fpath[1]}/_splitdance"
_splitdance_batches() {
  local -a names args
  [[ -n \${opt_args[--db]} ]] && args+=(--db "\${(Q)opt_args[--db]}")
  names=(\${(f)"$(splitdance completion --batches "\${args[@]}" 2>/dev/null)"})
  compadd -a names
}

# Task keys of the --batch on the line (the most recent batch without one); compadd quotes them.
_splitdance_keys() {
  local -a keys args
  [[ -n \${opt_args[--db]} ]] && args+=(--db "\${(Q)opt_args[--db]}")
  [[ -n \${opt_args[--batch]} ]] && args+=(--batch "\${(Q)opt_args[--batch]}")
  keys=(\${(f)"$(splitdance completion --keys "\${(Q)PREFIX}" "\${args[@]}" 2>/dev/null)"})
  compadd -a keys
}

_splitdance() {
  local -a commands
  commands=(
${list}
  )
  if (( CURRENT == 2 )); then
    _describe -t commands 'splitdance command' commands
    return
  fi
  local cmd=\${words[2]}
  shift words
  (( CURRENT-- ))
  case $cmd in
${cases}
  esac
}

if [[ \${zsh_eval_context[-1]} == loadautofunc ]]; then
  _splitdance "$@"
else
  compdef _splitdance splitdance
fi
`;
}

export function fishCompletion(commands: CommandModel[]): string {
  const fq = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  const lines = ['# fish completion for splitdance: splitdance completion fish > ~/.config/fish/completions/splitdance.fish', 'complete -c splitdance -f'];
  for (const c of commands) lines.push(`complete -c splitdance -n __fish_use_subcommand -a ${c.name} -d ${fq(c.description)}`);
  for (const c of commands) {
    const when = `-n '__fish_seen_subcommand_from ${c.name}'`;
    if (c.fileOperand) lines.push(`complete -c splitdance ${when} -F`);
    if (c.keyOperand) lines.push(`complete -c splitdance ${when} -a '(__fish_splitdance_keys)'`);
    if (c.name === 'completion') lines.push(`complete -c splitdance ${when} -a ${fq(SHELLS.join(' '))}`);
    for (const o of c.options) {
      const names = [o.long ? `-l ${o.long.slice(2)}` : '', o.short ? `-s ${o.short.slice(1)}` : ''].filter(Boolean).join(' ');
      const value =
        o.value === undefined
          ? ''
          : o.completes === 'batches'
            ? " -x -a '(splitdance completion --batches (__fish_splitdance_db) 2>/dev/null)'"
            : o.completes === 'statuses'
              ? ` -x -a ${fq(STATUSES.join(' '))}`
              : o.completes === 'files'
                ? ' -r -F'
                : ' -x';
      lines.push(`complete -c splitdance ${when} ${names}${value} -d ${fq(o.description)}`);
    }
  }
  return `${lines.join('\n')}

# The --db already on the line, so batch names come from the store the command will use.
function __fish_splitdance_db
  set -l words (commandline -opc)
  for i in (seq (count $words))
    if test "$words[$i]" = --db; and test $i -lt (count $words)
      echo --db
      echo $words[(math $i + 1)]
    end
  end
end

# Task keys of the --batch on the line (the most recent batch without one): fish escapes them.
function __fish_splitdance_keys
  set -l words (commandline -opc)
  set -l args
  for i in (seq (count $words))
    if contains -- $words[$i] --db --batch; and test $i -lt (count $words)
      set -a args $words[$i] $words[(math $i + 1)]
    end
  end
  splitdance completion --keys (commandline -ct) $args 2>/dev/null
end
`;
}
