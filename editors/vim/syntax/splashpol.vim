" Vim syntax file
" Language:   Splash policy (.splashpol)
" Keywords are kept equal to the keyword rules of grammar/splashpol.pest by
" tests/tests/editors_sync.rs.

if exists("b:current_syntax")
  finish
endif

" Keywords contain hyphens (`read-only`, `host-writes`).
syntax iskeyword @,48-57,_,-

syntax keyword splashpolKeyword active-roots address-space aggregate allow-exec args at
syntax keyword splashpolKeyword bounded bubblewrap bytes call cgroup combined cpu
syntax keyword splashpolKeyword deny-known-escape-surface dynamic endpoint executables file-size
syntax keyword splashpolKeyword group host host-writes identity ids inodes io join-timeout landlock
syntax keyword splashpolKeyword limits max memory mounts network-broker none off
syntax keyword splashpolKeyword open-files origin parent pids pin policy private processes
syntax keyword splashpolKeyword project quota read read-only read-write required root
syntax keyword splashpolKeyword runner runtime seccomp session size splashpol
syntax keyword splashpolKeyword strict-allowlist swap tmp tmpfs unbounded unlimited
syntax keyword splashpolKeyword user user-namespaces watchdog worker write writes
syntax keyword splashpolKeyword allowed denied exec expect hidden network syscall writable

syntax match splashpolNumber "\<\d[0-9_]*\(\.\d[0-9_]*\)\="
" Defined after numbers so a `MAJOR:MINOR` device wins over its first number.
syntax match splashpolDevice "\<\d\+:\d\+\>"
syntax region splashpolString start=+"+ skip=+\\[\\"]+ end=+"+ end=+$+ oneline contains=splashpolEscape
syntax match splashpolEscape contained +\\[\\"]+
syntax match splashpolComment "#.*$"

highlight default link splashpolKeyword Keyword
highlight default link splashpolDevice Number
highlight default link splashpolNumber Number
highlight default link splashpolString String
highlight default link splashpolEscape SpecialChar
highlight default link splashpolComment Comment

let b:current_syntax = "splashpol"
