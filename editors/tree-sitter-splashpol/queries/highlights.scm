; Highlighting for `.splashpol` files, as the TextMate and Vim grammars do:
; exactly the keywords of `grammar/splashpol.pest` (kept in step by
; `tests/tests/editors_sync.rs`), comments, strings, numbers and `MAJOR:MINOR`
; devices. Units (`MiB`, `s`) and syscall names are plain words; `read` and
; `write` in a strict allowlist are syscall names, not keywords.

(comment) @comment

(string) @string

(number) @constant.numeric

(device) @constant.numeric

[
  "{"
  "}"
  "["
  "]"
] @punctuation.bracket

[
  ","
  ";"
] @punctuation.delimiter

[
  "splashpol" "policy" "bubblewrap" "worker" "args" "runtime" "at" "root"
  "host" "tmpfs" "size" "read-only" "read-write" "quota" "project" "bytes"
  "inodes" "tmp" "off" "private" "writes" "bounded" "host-writes"
  "unbounded" "user-namespaces" "none" "pin" "mounts" "executables"
  "aggregate" "active-roots" "max" "seccomp" "deny-known-escape-surface"
  "strict-allowlist" "limits" "runner" "required" "cpu" "address-space"
  "processes" "open-files" "file-size" "landlock" "allow-exec" "combined"
  "cgroup" "parent" "memory" "swap" "pids" "io" "read" "write"
  "join-timeout" "watchdog" "session" "call" "network-broker" "endpoint"
  "origin" "ids" "identity" "user" "group" "dynamic" "unlimited" "expect"
  "writable" "hidden" "exec" "denied" "allowed" "syscall" "network"
] @keyword
