/**
 * The primitives each module declares its environment variables with: one declaration gives a
 * variable's name, parsing, bounds, default and the description the README's table shows.
 *
 * A section groups a module's variables under an injection token; the root lists every section and
 * reads them all with one `Reader`, so that one `ConfigError` names every bad variable.
 */

export type Env = Record<string, string | undefined>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** What a default, a parser or a section's derive and check steps may look at during a reading. */
export interface Reading {
  /** Another variable's value, read once however often it is asked for. */
  get<T>(variable: Variable<T>): T;
  /** Another section's value (its derive step run once). */
  section<T>(section: Section<T>): T;
  /** Whether the environment sets the variable (blank counts as unset). */
  isSet(variable: Variable<unknown>): boolean;
  problem(message: string): void;
}

export interface Variable<T> {
  readonly name: string;
  /** Markdown, for the README's table. */
  readonly description: string;
  /** The default as the README's table shows it (markdown). */
  readonly defaultText: string;
  /** `raw` is the trimmed value, undefined when unset or blank. */
  read(raw: string | undefined, reading: Reading): T;
}

/** A default is a value, or computed from other variables; then the README needs it in words. */
type Default<T> =
  { default: T; defaultText?: string } | { default: (reading: Reading) => T; defaultText: string };

interface Described {
  description: string;
}

interface NoDefault {
  /** Without a default, an unset variable reads as null; the table says "unset" unless told. */
  defaultText?: string;
}

interface Bounds {
  min: number;
  max: number;
}

type Options<T> = Described & Partial<Default<T>> & NoDefault;

function codeText(value: unknown): string {
  return `\`${String(value)}\``;
}

/**
 * A variable of one value: `parse` takes a set value and either returns what it reads or reports a
 * problem and calls `fallback` (the default, or null), so that reading carries on to the next one.
 */
function scalar<T>(
  name: string,
  options: Options<T>,
  parse: (value: string, reading: Reading, fallback: () => T | null) => T | null,
): Variable<T | null> {
  const fallback = (reading: Reading): T | null => {
    const given = options.default;
    if (given === undefined) return null;
    return typeof given === 'function' ? (given as (reading: Reading) => T)(reading) : given;
  };
  const defaultText =
    options.defaultText ??
    (options.default === undefined || typeof options.default === 'function'
      ? 'unset'
      : codeText(options.default));
  return {
    name,
    description: options.description,
    defaultText,
    read: (raw, reading) =>
      raw === undefined ? fallback(reading) : parse(raw, reading, () => fallback(reading)),
  };
}

export function int(name: string, options: Described & Bounds & Default<number>): Variable<number>;
export function int(name: string, options: Described & Bounds & NoDefault): Variable<number | null>;
export function int(name: string, options: Described & Bounds & Options<number>): Variable<number | null> {
  return scalar(name, options, (value, reading, fallback) => {
    const parsed = Number(value);
    if (!/^-?\d+$/.test(value) || parsed < options.min || parsed > options.max) {
      reading.problem(`${name} must be an integer from ${options.min} to ${options.max}, got "${value}"`);
      return fallback();
    }
    return parsed;
  });
}

export function number(name: string, options: Described & Bounds & Default<number>): Variable<number> {
  return scalar(name, options, (value, reading, fallback) => {
    const parsed = Number(value);
    if (!Number.isFinite(parsed) || parsed < options.min || parsed > options.max) {
      reading.problem(`${name} must be a number from ${options.min} to ${options.max}, got "${value}"`);
      return fallback();
    }
    return parsed;
  }) as Variable<number>;
}

export function bool(name: string, options: Described & Default<boolean>): Variable<boolean> {
  return scalar(name, options, (value, reading, fallback) => {
    if (/^(true|1|yes)$/i.test(value)) return true;
    if (/^(false|0|no)$/i.test(value)) return false;
    reading.problem(`${name} must be true or false, got "${value}"`);
    return fallback();
  }) as Variable<boolean>;
}

export function oneOf<const T extends string>(
  name: string,
  allowed: readonly T[],
  options: Described & Default<T>,
): Variable<T>;
export function oneOf<const T extends string>(
  name: string,
  allowed: readonly T[],
  options: Described & NoDefault,
): Variable<T | null>;
export function oneOf<const T extends string>(
  name: string,
  allowed: readonly T[],
  options: Options<T>,
): Variable<T | null> {
  return scalar(name, options, (value, reading, fallback) => {
    if ((allowed as readonly string[]).includes(value)) return value as T;
    reading.problem(`${name} must be one of ${allowed.join(', ')}, got "${value}"`);
    return fallback();
  });
}

export function string(name: string, options: Described & Default<string>): Variable<string>;
export function string(name: string, options: Described & NoDefault): Variable<string | null>;
export function string(name: string, options: Options<string>): Variable<string | null> {
  return scalar(name, options, (value) => value);
}

/**
 * A URL with one of `protocols`. A bad one is reported (its password hidden) and still returned, so
 * that the checks of combinations see that it was set.
 */
export function url(
  name: string,
  options: Described & { protocols: string[] } & Default<string>,
): Variable<string>;
export function url(
  name: string,
  options: Described & { protocols: string[] } & NoDefault,
): Variable<string | null>;
export function url(
  name: string,
  options: Described & { protocols: string[] } & Options<string>,
): Variable<string | null> {
  return scalar(name, options, (value, reading) => {
    checkUrl(name, value, options.protocols, reading);
    return value;
  });
}

/** Reports `value` unless it is a URL with one of `protocols`. */
export function checkUrl(name: string, value: string, protocols: string[], reading: Reading): void {
  try {
    const parsed = new URL(value);
    if (!protocols.includes(parsed.protocol)) throw new Error('protocol');
  } catch {
    reading.problem(`${name} must be a URL with scheme ${protocols.join(' or ')}, got "${redactUrl(value)}"`);
  }
}

/** A variable with a parser of its own, which sees unset as undefined and reports its own problems. */
export function custom<T>(
  name: string,
  options: Described & { defaultText: string; parse: (raw: string | undefined, reading: Reading) => T },
): Variable<T> {
  return { name, description: options.description, defaultText: options.defaultText, read: options.parse };
}

/** Hides the password of a connection URL so that it can be printed in an error. */
export function redactUrl(value: string): string {
  try {
    const parsed = new URL(value);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return value;
  }
}

export interface Section<T = unknown> {
  /** The injection token classes use: `@Inject(SEARCH_CONFIG)`. */
  readonly token: symbol;
  /** The heading of the section's table in the README. */
  readonly title: string;
  readonly variables: readonly Variable<unknown>[];
  /** Reads the section's variables and shapes its value. */
  derive(reading: Reading): T;
  /** Reports values that are each valid but not together; run once every section is read. */
  check(value: T, reading: Reading): void;
}

export type ValuesOf<V extends Record<string, Variable<unknown>>> = {
  -readonly [K in keyof V]: V[K] extends Variable<infer T> ? T : never;
};

export type ConfigOf<S> = S extends Section<infer T> ? T : never;

/**
 * A section: its value is the record of its variables' values, or what `derive` makes of them
 * (computed fields, values that depend on another section).
 */
export function section<const V extends Record<string, Variable<unknown>>, T = ValuesOf<V>>(
  tokenName: string,
  options: {
    title: string;
    variables: V;
    derive?: (values: ValuesOf<V>, reading: Reading) => T;
    check?: (value: T, reading: Reading) => void;
  },
): Section<T> {
  const entries = Object.entries(options.variables);
  return {
    token: Symbol(tokenName),
    title: options.title,
    variables: entries.map(([, variable]) => variable),
    derive(reading) {
      const values = Object.fromEntries(
        entries.map(([key, variable]) => [key, reading.get(variable)]),
      ) as ValuesOf<V>;
      return options.derive ? options.derive(values, reading) : (values as unknown as T);
    },
    check: (value, reading) => options.check?.(value, reading),
  };
}

/** Reads variables and sections once each, and collects every problem instead of stopping at the first. */
export class Reader implements Reading {
  readonly problems: string[] = [];
  private readonly values = new Map<Variable<unknown>, unknown>();
  private readonly sections = new Map<Section<unknown>, unknown>();
  private readonly deriving = new Set<Section<unknown>>();

  constructor(private readonly env: Env) {}

  get<T>(variable: Variable<T>): T {
    if (this.values.has(variable)) return this.values.get(variable) as T;
    const value = variable.read(this.raw(variable.name), this);
    this.values.set(variable, value);
    return value;
  }

  section<T>(section: Section<T>): T {
    if (this.sections.has(section)) return this.sections.get(section) as T;
    if (this.deriving.has(section)) throw new Error(`section ${section.title} depends on itself`);
    this.deriving.add(section);
    const value = section.derive(this);
    this.deriving.delete(section);
    this.sections.set(section, value);
    return value;
  }

  isSet(variable: Variable<unknown>): boolean {
    return this.raw(variable.name) !== undefined;
  }

  problem(message: string): void {
    this.problems.push(message);
  }

  private raw(name: string): string | undefined {
    const value = this.env[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  }
}

export type Sections = Record<string, Section<unknown>>;

export type Composed<S extends Sections> = { [K in keyof S]: ConfigOf<S[K]> };

/**
 * Reads every section, then runs their checks, and throws one ConfigError naming every problem.
 * A variable declared in two sections is a mistake of the code, not of the environment.
 */
export function readConfig<S extends Sections>(sections: S, env: Env): Composed<S> {
  const names = Object.values(sections).flatMap((section) => section.variables.map((v) => v.name));
  const twice = names.filter((name, i) => names.indexOf(name) !== i);
  if (twice.length > 0) throw new Error(`declared in two places: ${twice.join(', ')}`);

  const reader = new Reader(env);
  const values = Object.fromEntries(
    Object.entries(sections).map(([key, section]) => [key, reader.section(section)]),
  ) as Composed<S>;
  for (const [key, section] of Object.entries(sections)) section.check(values[key], reader);
  if (reader.problems.length > 0) throw new ConfigError(reader.problems);
  return values;
}

/** One section alone (and what its defaults depend on), with its checks: for tests of one module. */
export function readSection<T>(section: Section<T>, env: Env = {}): T {
  const reader = new Reader(env);
  const value = reader.section(section);
  section.check(value, reader);
  if (reader.problems.length > 0) throw new ConfigError(reader.problems);
  return value;
}

/** The README's configuration tables: one per section, a row per variable. */
export function renderConfigTables(sections: readonly Section<unknown>[]): string {
  const cell = (text: string) => text.replace(/\|/g, '\\|');
  return sections
    .map((section) =>
      [
        `### ${section.title}`,
        '',
        '| variable | default | meaning |',
        '|---|---|---|',
        ...section.variables.map(
          (v) => `| \`${v.name}\` | ${cell(v.defaultText)} | ${cell(v.description)} |`,
        ),
      ].join('\n'),
    )
    .join('\n\n');
}

/** A comma-separated list of origins (`https://app.example.com`, no path), or null when unset. */
export function origins(
  name: string,
  options: Described & { defaultText: string },
): Variable<string[] | null> {
  return custom(name, {
    ...options,
    parse: (value, reading) => {
      if (value === undefined) return null;
      const list = value.split(',').map((entry) => entry.trim());
      const bad = list.filter((origin) => {
        try {
          const url = new URL(origin);
          return !['http:', 'https:'].includes(url.protocol) || url.origin !== origin;
        } catch {
          return true;
        }
      });
      if (bad.length > 0) {
        reading.problem(
          `${name} must be a comma-separated list of origins such as https://app.example.com (scheme, host and ` +
            `port only); ${bad.map((entry) => JSON.stringify(entry)).join(', ')} is not one`,
        );
      }
      return list;
    },
  });
}
