/**
 * The `switchboard` command line as data: which commands exist, their usage text, and the reading of
 * argv into one typed command. All of it runs before any configuration is read or database opened,
 * so help, the version and a mistyped command cost nothing and touch nothing.
 */

/** A mistake in the command line. `topic` names the command whose usage to show (none: all of them). */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly topic: readonly string[] = [],
  ) {
    super(message);
    this.name = 'UsageError';
  }
}

interface CommandSpec {
  words: readonly [string] | readonly [string, string];
  /** What follows the command words in a usage line. */
  synopsis: string;
  /** For the command list; may wrap. */
  summary: string;
  /** More for `switchboard help <command>`. */
  details?: string;
  /** Options that take a value, with their help. */
  options?: Readonly<Record<string, string>>;
  /** False for commands that work without the database. */
  database: boolean;
}

const COMPLIANCE_STATUSES = ['approved', 'pending', 'rejected'] as const;
export type ComplianceStatus = (typeof COMPLIANCE_STATUSES)[number];

const COMMANDS: readonly CommandSpec[] = [
  {
    words: ['migrate'],
    synopsis: '',
    summary: 'Apply pending database migrations (creates the embedded database if there is none)',
    database: true,
  },
  {
    words: ['users', 'verify'],
    synopsis: 'EMAIL',
    summary: "Mark a user's email address as verified",
    database: true,
  },
  {
    words: ['users', 'make-admin'],
    synopsis: 'EMAIL [--organization ID]',
    summary: 'Give a user the admin role (in every organization they belong to, or only in organization ID)',
    options: { '--organization': 'ID   Only in this organization' },
    database: true,
  },
  {
    words: ['billing', 'grant'],
    synopsis: 'ORG_ID AMOUNT',
    summary: "Credit an organization's wallet (recorded in its ledger)",
    details: 'AMOUNT is positive, with at most 10 digits and 4 decimals (25 or 25.50).',
    database: true,
  },
  {
    words: ['compliance', 'set'],
    synopsis: 'PHONE_NUMBER_ID STATUS [REASON]',
    summary: `Set a number's SMS compliance status: ${COMPLIANCE_STATUSES.join(', ')} (REASON required, only with rejected)`,
    details: 'The number needs a submission. REASON may be quoted or given as several words.',
    database: true,
  },
  {
    words: ['openapi'],
    synopsis: '',
    summary: 'Print the OpenAPI document of the API (needs no database and no running server)',
    database: false,
  },
];

/** The column where summaries start in the list of commands. */
const WIDTH = 41;

const DATABASE_NOTE = `Commands use the server's configuration (DATA_DIR or DATABASE_URL). With the embedded database,
stop the server first: one process at a time may open it.
`;

function usageLine(spec: CommandSpec): string {
  return ['switchboard', ...spec.words, spec.synopsis].filter(Boolean).join(' ');
}

/** Wraps `text` to lines of at most `width` characters. */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  return [...lines, line];
}

/** The usage of every command. */
export const USAGE = `Usage: switchboard <command> [arguments]
       switchboard help [command]      (or switchboard <command> --help)
       switchboard --version

Commands:
${COMMANDS.map((spec) => {
  const head = `  ${[...spec.words, spec.synopsis].filter(Boolean).join(' ')}`;
  const [first = '', ...rest] = wrap(spec.summary, 100 - WIDTH);
  const lines =
    head.length < WIDTH
      ? [head.padEnd(WIDTH) + first, ...rest.map((l) => ' '.repeat(WIDTH) + l)]
      : [head, ...[first, ...rest].map((l) => ' '.repeat(WIDTH) + l)];
  return lines.join('\n');
}).join('\n')}

${DATABASE_NOTE}`;

/** The usage of the commands under `topic` (`users`: both users commands), or of all. */
export function usageOf(topic: readonly string[]): string {
  const specs = COMMANDS.filter((spec) => topic.every((word, i) => spec.words[i] === word));
  if (topic.length === 0 || specs.length === 0) return USAGE;
  const usages = specs.map((spec) => {
    const options = Object.entries(spec.options ?? {}).map(([name, help]) => `  ${name} ${help}`);
    return [
      `Usage: ${usageLine(spec)}`,
      '',
      ...wrap(spec.summary, 100),
      ...(spec.details ? wrap(spec.details, 100) : []),
      ...(options.length ? ['', 'Options:', ...options] : []),
    ].join('\n');
  });
  const note = specs.some((spec) => spec.database) ? `\n${DATABASE_NOTE}` : '';
  return `${usages.join('\n\n')}\n${note}`;
}

export type Command =
  | { name: 'migrate' }
  | { name: 'openapi' }
  | { name: 'users verify'; email: string }
  | { name: 'users make-admin'; email: string; organizationId: number | undefined }
  | { name: 'billing grant'; organizationId: number; amount: number }
  | { name: 'compliance set'; phoneNumberId: number; status: ComplianceStatus; reason: string | undefined };

export type Invocation =
  | { kind: 'help'; text: string }
  | { kind: 'version' }
  | { kind: 'command'; command: Command };

const HELP_FLAGS = new Set(['--help', '-h']);
const VERSION_FLAGS = new Set(['--version', '-v']);

/** An option-looking argument; `-5` is not one (a negative number is an argument, refused later). */
function isOption(arg: string): boolean {
  return arg.startsWith('--') || /^-[a-zA-Z]/.test(arg);
}

function findGroup(command: string | undefined): CommandSpec[] {
  if (command === undefined) throw new UsageError('No command given');
  const group = COMMANDS.filter((spec) => spec.words[0] === command);
  if (group.length === 0) throw new UsageError(`Unknown command: ${command}`);
  return group;
}

/** The command `words` name, or a UsageError saying what is unknown or missing. */
function findSpec(words: readonly string[]): CommandSpec {
  const [command, sub] = words;
  const group = findGroup(command);
  if (group.length === 1 && group[0]!.words.length === 1) return group[0]!;
  const spec = group.find((s) => s.words[1] === sub);
  if (spec) return spec;
  const subs = group.map((s) => s.words[1]).join(', ');
  throw new UsageError(
    sub === undefined || isOption(sub)
      ? `${command} needs a subcommand: ${subs}`
      : `Unknown command: ${command} ${sub}`,
    [command!],
  );
}

/** The usage of the command `words` start with: `users` gives both users commands. */
function helpFor(words: readonly string[]): string {
  const [command, sub] = words;
  const group = findGroup(command);
  if (sub === undefined || group[0]!.words.length === 1) return usageOf([command!]);
  return usageOf(findSpec(words).words);
}

/** Reads argv (without node and the script) into help, the version, or one command. */
export function parseArgs(argv: readonly string[]): Invocation {
  const [first, ...rest] = argv;
  if (first !== undefined && VERSION_FLAGS.has(first)) {
    if (rest.length) throw new UsageError(`${first} takes no arguments`);
    return { kind: 'version' };
  }
  if (first === 'help' || (first !== undefined && HELP_FLAGS.has(first))) {
    const unknown = rest.find(isOption);
    if (unknown) throw new UsageError(`Unknown option: ${unknown}`);
    return { kind: 'help', text: rest.length ? helpFor(rest) : USAGE };
  }
  if (first !== undefined && isOption(first)) throw new UsageError(`Unknown option: ${first}`);
  const end = argv.indexOf('--');
  const flags = end < 0 ? argv : argv.slice(0, end);
  if (flags.some((arg) => HELP_FLAGS.has(arg))) {
    return { kind: 'help', text: helpFor(flags.filter((arg) => !isOption(arg)).slice(0, 2)) };
  }
  const spec = findSpec(argv);
  const { positionals, options } = splitOptions(argv.slice(spec.words.length), spec);
  return { kind: 'command', command: toCommand(spec, positionals, options) };
}

/** Separates `--name value` / `--name=value` options (only those `spec` knows) from the arguments. */
function splitOptions(
  args: readonly string[],
  spec: CommandSpec,
): { positionals: string[]; options: Map<string, string> } {
  const positionals: string[] = [];
  const options = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') {
      positionals.push(...args.slice(i + 1));
      break;
    }
    if (!isOption(arg)) {
      positionals.push(arg);
      continue;
    }
    const [name = '', inline] = arg.split(/=(.*)/s);
    if (!spec.options || !Object.hasOwn(spec.options, name)) {
      throw new UsageError(`Unknown option for ${spec.words.join(' ')}: ${name}`, spec.words);
    }
    const value = inline ?? args[++i];
    if (value === undefined || value === '') throw new UsageError(`${name} needs a value`, spec.words);
    options.set(name, value);
  }
  return { positionals, options };
}

/** Plain decimal digits only: Number() would also read "0x1f" or "3e1" as some other row. */
function parseId(text: string | undefined): number | undefined {
  const id = /^[1-9]\d{0,9}$/.test(text ?? '') ? Number(text) : Number.NaN;
  return id <= 2_147_483_647 ? id : undefined;
}

function toCommand(spec: CommandSpec, args: string[], options: Map<string, string>): Command {
  const name = spec.words.join(' ') as Command['name'];
  const usage = (message: string) => new UsageError(message, spec.words);
  const atMost = (count: number) => {
    if (args.length > count) throw usage(`Unexpected argument for ${name}: ${args[count]}`);
  };
  switch (name) {
    case 'migrate':
    case 'openapi':
      atMost(0);
      return { name };
    case 'users verify':
    case 'users make-admin': {
      const [email] = args;
      if (!email) throw usage(`${name} needs an EMAIL`);
      atMost(1);
      if (name === 'users verify') return { name, email };
      const organization = options.get('--organization');
      const organizationId = organization === undefined ? undefined : parseId(organization);
      if (organization !== undefined && organizationId === undefined) {
        throw usage('--organization needs a numeric organization id');
      }
      return { name, email, organizationId };
    }
    case 'billing grant': {
      const [organization, amountText] = args;
      const organizationId = parseId(organization);
      if (organizationId === undefined) throw usage('billing grant needs a numeric ORG_ID');
      const amount = Number(amountText);
      if (!amountText || !/^\d{1,10}(\.\d{1,4})?$/.test(amountText) || amount <= 0) {
        throw usage('billing grant needs a positive AMOUNT of at most 10 digits and 4 decimals');
      }
      atMost(2);
      return { name, organizationId, amount };
    }
    case 'compliance set': {
      const [idText, status, ...words] = args;
      const phoneNumberId = parseId(idText);
      if (phoneNumberId === undefined) throw usage('compliance set needs a numeric PHONE_NUMBER_ID');
      const known = COMPLIANCE_STATUSES.find((s) => s === status);
      if (!known) throw usage(`compliance set needs a STATUS: ${COMPLIANCE_STATUSES.join(', ')}`);
      // An unquoted reason arrives as several words.
      const reason = words.join(' ').trim() || undefined;
      if (known === 'rejected' && !reason) throw usage('compliance set … rejected needs a REASON');
      if (known !== 'rejected' && reason) throw usage('A REASON is only given with rejected');
      return { name, phoneNumberId, status: known, reason };
    }
  }
}
