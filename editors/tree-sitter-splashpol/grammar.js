/**
 * @file The `.splashpol` policy language for tree-sitter.
 * @license Apache-2.0
 *
 * A transcription of `grammar/splashpol.pest`, the one source of the
 * language's syntax: the same statements, keywords, values and layout.
 * Newlines are significant (they end statements, as `;` does), so the extras
 * are spaces, tabs and comments only. Keywords are whole words: the `word`
 * token below is what a keyword must match entirely, as the pest grammar's
 * `!idc` guard requires.
 *
 * `tests/tests/editors_sync.rs` checks that the keywords and statements
 * generated from this file (`src/grammar.json`) are exactly the pest
 * grammar's; `editors/tree-sitter-splashpol/tests/` parses every bundled and
 * corpus policy and checks that this grammar accepts exactly what the pest
 * grammar accepts. After editing, regenerate `src/` (see README.md).
 */

/// `{ ENTRY (SEP+ ENTRY)* }` with separators allowed around the entries.
function block($, entry) {
  return seq(
    '{',
    repeat($._sep),
    repeat(seq(entry, repeat1($._sep))),
    optional(entry),
    '}',
  );
}

/// An optional runner path: `runner PATH`.
function runner($) {
  return optional(seq('runner', field('runner', $.string)));
}

module.exports = grammar({
  name: 'splashpol',

  extras: $ => [/[ \t]/, $.comment],

  word: $ => $._word,

  rules: {
    source_file: $ => seq(
      optional('\uFEFF'),
      repeat($._sep),
      optional(seq($.header, repeat1($._sep))),
      $.policy,
      repeat($._sep),
    ),

    header: $ => seq('splashpol', field('version', $.number)),

    policy: $ => seq('policy', field('name', $.string), $.policy_body),

    policy_body: $ => block($, $._statement),

    _statement: $ => choice(
      $.root_statement,
      $.runtime_statement,
      $.runner_statement,
      $.tmp_statement,
      $.tmpfs_statement,
      $.worker_statement,
      $.writes_statement,
      $.watchdog_statement,
      $.bubblewrap_statement,
      $.limits_statement,
      $.landlock_statement,
      $.seccomp_statement,
      $.pin_statement,
      $.user_namespaces_statement,
      $.host_writes_statement,
      $.quota_statement,
      $.active_roots_statement,
      $.cgroup_statement,
      $.network_broker_statement,
      $.expect_statement,
      $.identity_statement,
    ),

    // ------------------------------------------------------------ statements

    bubblewrap_statement: $ => seq('bubblewrap', field('path', $.string)),

    worker_statement: $ => seq(
      'worker',
      field('path', $.string),
      optional(seq('args', field('args', $.string_list))),
    ),

    runtime_statement: $ => seq(
      'runtime',
      field('source', $.string),
      'at',
      field('destination', $.string),
    ),

    root_statement: $ => seq(
      'root',
      field('id', $.root_id),
      choice(
        seq(
          'host',
          field('source', $.string),
          'at',
          field('destination', $.string),
          field('access', $.access),
          optional($.root_quota),
        ),
        seq('tmpfs', 'at', field('destination', $.string), 'size', field('size', $.quantity)),
      ),
    ),

    // A root id: a string in the role of a selector.
    root_id: $ => $.string,

    access: _ => choice('read-only', 'read-write'),

    root_quota: $ => seq(
      'quota',
      'project',
      field('project', $.number),
      'bytes',
      field('bytes', $.quantity),
      'inodes',
      field('inodes', $.quantity),
    ),

    tmp_statement: $ => seq(
      'tmp',
      choice('off', seq('private', optional(seq('size', field('size', $.quantity))))),
    ),

    writes_statement: _ => seq('writes', 'bounded'),

    host_writes_statement: _ => seq('host-writes', 'unbounded'),

    user_namespaces_statement: _ => seq('user-namespaces', 'none'),

    pin_statement: $ => seq('pin', $.pin_item, repeat(seq(',', $.pin_item))),

    pin_item: _ => choice('mounts', 'executables'),

    quota_statement: $ => seq(
      'quota',
      'aggregate',
      'bytes',
      field('bytes', $.quantity),
      'inodes',
      field('inodes', $.quantity),
    ),

    tmpfs_statement: $ => seq('tmpfs', 'aggregate', field('size', $.quantity)),

    active_roots_statement: $ => seq('active-roots', 'max', field('max', $.quantity)),

    seccomp_statement: $ => seq(
      'seccomp',
      choice('off', 'deny-known-escape-surface', seq('strict-allowlist', $.syscall_block)),
    ),

    // `{ read write ... }`: syscall names separated by blanks or separators.
    syscall_block: $ => seq('{', repeat(choice($._sep, $.syscall_name)), '}'),

    syscall_name: _ => /[A-Za-z0-9_]+/,

    runner_statement: $ => seq('runner', 'combined', field('path', $.string)),

    watchdog_statement: $ => seq(
      'watchdog',
      'session',
      field('session', $.quantity),
      optional(seq('call', field('call', $.quantity))),
    ),

    network_broker_statement: $ => seq(
      'network-broker',
      field('catalog', $.catalog),
      'parent',
      field('parent', $.string),
      'at',
      field('destination', $.string),
      'ids',
      field('ids', $.string_list),
    ),

    catalog: _ => choice('endpoint', 'origin'),

    identity_statement: $ => seq(
      'identity',
      choice(
        seq('user', field('user', $.number), 'group', field('group', $.number)),
        'dynamic',
      ),
    ),

    // `limits [runner PATH] [required] { cpu 30 s; ... }`
    limits_statement: $ => seq(
      'limits',
      runner($),
      optional('required'),
      $.limits_block,
    ),

    limits_block: $ => block($, $.limit_entry),

    limit_entry: $ => seq(field('name', $.limit_name), field('value', $.quantity)),

    limit_name: _ => choice('cpu', 'address-space', 'processes', 'open-files', 'file-size'),

    // `landlock [runner PATH] [{ allow-exec PATH ... }]`
    landlock_statement: $ => seq('landlock', runner($), optional($.landlock_block)),

    landlock_block: $ => block($, $.allow_exec),

    allow_exec: $ => seq('allow-exec', field('path', $.string)),

    // `cgroup parent PATH runner PATH [required] { ... }`
    cgroup_statement: $ => seq(
      'cgroup',
      'parent',
      field('parent', $.string),
      'runner',
      field('runner', $.string),
      optional('required'),
      $.cgroup_block,
    ),

    cgroup_block: $ => block($, choice($.cgroup_value, $.io_entry)),

    cgroup_value: $ => seq(field('name', $.cgroup_name), field('value', $.quantity)),

    cgroup_name: _ => choice('cpu', 'memory', 'swap', 'pids', 'join-timeout'),

    io_entry: $ => seq('io', field('device', $.device), $.io_block),

    io_block: $ => block($, $.io_limit),

    io_limit: $ => seq(field('direction', $.io_direction), field('value', $.quantity)),

    io_direction: _ => choice('read', 'write'),

    // `expect { ... }`: entries separated by separators or blanks.
    expect_statement: $ => seq('expect', $.expect_block),

    expect_block: $ => seq('{', repeat(choice($._sep, $._expect_entry)), '}'),

    _expect_entry: $ => choice(
      $.expect_read_only,
      $.expect_writable,
      $.expect_hidden,
      $.expect_exec,
      $.expect_syscall,
      $.expect_network,
      $.expect_processes,
      $.expect_user_namespaces,
    ),

    expect_read_only: $ => seq('read-only', field('path', $.string)),

    expect_writable: $ => seq(
      'writable',
      field('path', $.string),
      optional(seq('max', field('max', $.quantity))),
    ),

    expect_hidden: $ => seq('hidden', field('path', $.string)),

    expect_exec: $ => seq('exec', choice('denied', 'allowed'), field('path', $.string)),

    // A name is a word, so the keyword of an entry that follows on the same
    // line ends the list, as in the pest grammar.
    expect_syscall: $ => seq('syscall', 'denied', repeat1(alias($._word, $.syscall_name))),

    expect_network: _ => seq('network', 'none'),

    expect_processes: $ => seq('processes', 'max', field('max', $.quantity)),

    expect_user_namespaces: _ => seq('user-namespaces', 'none'),

    // ---------------------------------------------------------------- values

    // A number with an optional unit word, or `unlimited`.
    quantity: $ => choice(seq($.number, optional($.unit)), 'unlimited'),

    number: _ => /[0-9](_?[0-9])*(\.[0-9](_?[0-9])*)?/,

    device: _ => /[0-9](_?[0-9])*:[0-9](_?[0-9])*/,

    // A unit word (`MiB`, `s`) with an optional `/WORD` rate suffix. A word
    // that is a keyword where the statement goes on (`inodes`, `call`) is
    // that keyword, as in the pest grammar.
    unit: $ => seq($._word, optional(token.immediate(/\/[A-Za-z]+/))),

    // A double-quoted string; `\"` and `\\` are the only escapes. A NUL
    // byte, which the pest grammar takes here so that the checker can name it
    // (`control-character`), is the end of input to a tree-sitter lexer: a
    // string or comment holding one is an error node.
    string: _ => token(seq('"', repeat(choice(/[^"\\\r\n]/, /\\["\\]/)), '"')),

    string_list: $ => seq(
      '[',
      repeat($._newline),
      optional(seq(
        $.string,
        repeat($._newline),
        repeat(seq(',', repeat($._newline), $.string, repeat($._newline))),
        optional(seq(',', repeat($._newline))),
      )),
      ']',
    ),

    comment: _ => token(seq('#', /[^\r\n]*/)),

    _sep: $ => choice($._newline, ';'),

    _newline: _ => /\r?\n|\r/,

    _word: _ => /[A-Za-z][A-Za-z0-9_-]*/,
  },
});
