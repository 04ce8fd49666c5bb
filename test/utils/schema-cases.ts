/**
 * Inputs derived from a tool's advertised input schema: those it declares valid (the required
 * arguments alone, every argument at either end of its range, each choice of an enum, null where
 * null is allowed) and those it declares invalid (each argument of a wrong type, past a bound, not
 * one of its choices; a required one missing; one it does not declare). A `oneOf` of `required`
 * alternatives (exactly one of some properties) is taken one alternative at a time: a valid input
 * gives exactly one, and giving both or neither is invalid. Values the schema cannot make up, the
 * ids of things that exist, are given as `known`; for an array, a pool its items are taken from.
 */

type JsonType = 'string' | 'integer' | 'number' | 'boolean' | 'array' | 'object' | 'null';

/** A JSON Schema as tools/list gives it. */
export interface Schema {
  type?: JsonType | JsonType[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: unknown[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  oneOf?: Schema[];
}

export interface SchemaCase {
  name: string;
  input: Record<string, unknown>;
}

type End = 'low' | 'high';

/**
 * A valid string is at most this long, though its maxLength be more: a valid document of the
 * maximum size would only keep the ingestion busy. Past the maximum is tested at the maximum.
 */
const LONGEST_SAMPLE = 2_000;

export function validCases(schema: Schema, known: Record<string, unknown>): SchemaCase[] {
  const cases: SchemaCase[] = [];
  for (const [index, choice] of choices(schema).entries()) {
    const minimal = argumentsOf(schema, known, 'low', true, choice);
    const given = choice.length > 0 ? ` (with ${choice.join(', ')})` : '';
    cases.push(
      { name: `the required arguments alone${given}`, input: minimal },
      {
        name: `every argument at the low end${given}`,
        input: argumentsOf(schema, known, 'low', false, choice),
      },
      {
        name: `every argument at the high end${given}`,
        input: argumentsOf(schema, known, 'high', false, choice),
      },
    );
    // Each choice of a property is tried once, with the first alternative.
    if (index > 0) continue;
    for (const [name, property] of Object.entries(schema.properties ?? {})) {
      if (excluded(schema, choice).has(name)) continue;
      for (const value of property.enum ?? []) {
        cases.push({ name: `${name}: ${JSON.stringify(value)}`, input: { ...minimal, [name]: value } });
      }
      if (typesOf(property).includes('null')) {
        cases.push({ name: `${name}: null`, input: { ...minimal, [name]: null } });
      }
    }
  }
  return cases;
}

export function invalidCases(schema: Schema, known: Record<string, unknown>): SchemaCase[] {
  const properties = schema.properties ?? {};
  const alternatives = choices(schema);
  const cases: SchemaCase[] = [];
  for (const [name, property] of Object.entries(properties)) {
    // A property of an alternative is tried wrong in the alternative that gives it.
    const choice = alternatives.find((candidate) => !excluded(schema, candidate).has(name)) ?? [];
    const minimal = argumentsOf(schema, known, 'low', true, choice);
    for (const [why, value] of invalidValues(property)) {
      cases.push({ name: `${name} ${why}`, input: { ...minimal, [name]: value } });
    }
  }
  const minimal = argumentsOf(schema, known, 'low', true, alternatives[0]);
  for (const name of schema.required ?? []) {
    const input = { ...minimal };
    delete input[name];
    cases.push({ name: `${name} missing`, input });
  }
  if (schema.oneOf) {
    const named = alternatives.flat();
    const neither = { ...minimal };
    for (const name of named) delete neither[name];
    cases.push({ name: `none of ${named.join(', ')}`, input: neither });
    const all = Object.assign(
      {},
      ...alternatives.map((choice) => argumentsOf(schema, known, 'low', true, choice)),
    );
    cases.push({ name: `all of ${named.join(', ')}`, input: all as Record<string, unknown> });
  }
  for (const name of ['unexpected', 'dataset_id', 'dataset_ids'].filter(
    (candidate) => !(candidate in properties),
  )) {
    cases.push({ name: `${name}, not declared`, input: { ...minimal, [name]: known[name] ?? 1 } });
  }
  return cases;
}

/**
 * The properties each alternative of the schema's `oneOf` requires, or one empty choice for a schema
 * without one. A `oneOf` of anything but `required` lists is not what these cases can derive.
 */
function choices(schema: Schema): string[][] {
  if (!schema.oneOf) return [[]];
  return schema.oneOf.map((alternative) => {
    const keys = Object.keys(alternative);
    if (keys.length !== 1 || !alternative.required)
      throw new Error(`oneOf holds ${JSON.stringify(alternative)}`);
    return alternative.required;
  });
}

/** The properties of the alternatives other than `choice`, which an input giving it leaves out. */
function excluded(schema: Schema, choice: string[]): Set<string> {
  return new Set(
    choices(schema)
      .flat()
      .filter((name) => !choice.includes(name)),
  );
}

function argumentsOf(
  schema: Schema,
  known: Record<string, unknown>,
  end: End,
  requiredOnly: boolean,
  choice: string[] = [],
): Record<string, unknown> {
  const required = new Set([...(schema.required ?? []), ...choice]);
  const others = excluded(schema, choice);
  return Object.fromEntries(
    Object.entries(schema.properties ?? {})
      .filter(([name]) => (!requiredOnly || required.has(name)) && !others.has(name))
      .map(([name, property]) => [name, valueOf(name, property, known, end)]),
  );
}

/**
 * A known value, or for an array one at an end of its bounds with items from the known pool (none
 * repeated: the pool's are distinct), or a sample.
 */
function valueOf(name: string, property: Schema, known: Record<string, unknown>, end: End): unknown {
  if (!(name in known)) return sample(property, end);
  const value = known[name];
  if (!Array.isArray(value) || !typesOf(property).includes('array')) return value;
  const count = end === 'low' ? (property.minItems ?? 0) : (property.maxItems ?? value.length);
  if (count > value.length) throw new Error(`${name} needs ${count} known items, ${value.length} given`);
  return value.slice(0, count);
}

function typesOf(schema: Schema): JsonType[] {
  return schema.type === undefined ? [] : [schema.type].flat();
}

/** A valid value at one end of the schema's range. */
function sample(schema: Schema, end: End): unknown {
  if (schema.enum) return end === 'low' ? schema.enum[0] : schema.enum.at(-1);
  const low = end === 'low';
  switch (typesOf(schema).find((type) => type !== 'null')) {
    case 'integer':
    case 'number':
      return low ? (schema.minimum ?? 0) : (schema.maximum ?? (schema.minimum ?? 0) + 1);
    case 'string':
      return 'x'.repeat(
        low ? Math.max(schema.minLength ?? 1, 1) : Math.min(schema.maxLength ?? 10, LONGEST_SAMPLE),
      );
    case 'boolean':
      return !low;
    case 'array': {
      const count = low ? (schema.minItems ?? 0) : (schema.maxItems ?? 1);
      return schema.uniqueItems
        ? distinct(schema.items ?? {}, count, end)
        : repeat(schema.items ?? {}, count, end);
    }
    case 'object':
      return schema.properties ? argumentsOf(schema, {}, end, false) : {};
    case undefined:
      return 'x';
  }
}

function repeat(items: Schema, count: number, end: End): unknown[] {
  return Array.from({ length: count }, () => sample(items, end));
}

/** `count` different items, for an array whose items are unique: strings told apart by a suffix. */
function distinct(items: Schema, count: number, end: End): unknown[] {
  return Array.from({ length: count }, (_, i) => {
    const item = sample(items, end);
    if (typeof item !== 'string') throw new Error('unique items other than strings are not derived');
    return i === 0 ? item : `${item.slice(0, Math.max(item.length - String(i).length, 1))}${i}`;
  });
}

/** One value of each JSON type, for the types a schema does not take. */
const VALUES_BY_TYPE: [string, unknown][] = [
  ['a string', 'x'],
  ['a fraction', 42.5],
  ['an integer', 42],
  ['a boolean', true],
  ['an array', []],
  ['an object', {}],
  ['null', null],
];

function jsonType(value: unknown): JsonType {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value as 'string' | 'boolean' | 'object';
}

function invalidValues(schema: Schema): [string, unknown][] {
  const types = typesOf(schema);
  const takes = (value: unknown) =>
    types.includes(jsonType(value)) || (jsonType(value) === 'integer' && types.includes('number'));
  const values: [string, unknown][] = VALUES_BY_TYPE.filter(([, value]) => !takes(value)).map(
    ([what, value]) => [`as ${what}`, value],
  );
  const step = types.includes('integer') ? 1 : 0.5;
  if (schema.minimum !== undefined) values.push(['below its minimum', schema.minimum - step]);
  if (schema.maximum !== undefined) values.push(['above its maximum', schema.maximum + step]);
  if (schema.minLength) values.push(['under its minLength', 'x'.repeat(schema.minLength - 1)]);
  if (schema.maxLength !== undefined) values.push(['over its maxLength', 'x'.repeat(schema.maxLength + 1)]);
  if (schema.enum) values.push(['not one of its choices', 'none of these']);
  const items = schema.items ?? {};
  const many = (count: number) =>
    schema.uniqueItems ? distinct(items, count, 'low') : repeat(items, count, 'low');
  if (schema.minItems) values.push(['with too few items', many(schema.minItems - 1)]);
  if (schema.maxItems !== undefined) values.push(['with too many items', many(schema.maxItems + 1)]);
  if (schema.uniqueItems) values.push(['with an item repeated', repeat(items, 2, 'low')]);
  if (schema.items) {
    for (const [why, value] of invalidValues(schema.items)) values.push([`with an item ${why}`, [value]]);
  }
  return values;
}
