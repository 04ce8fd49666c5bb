/**
 * Inputs derived from a tool's advertised input schema: those it declares valid (the required
 * arguments alone, every argument at either end of its range, each choice of an enum, null where
 * null is allowed) and those it declares invalid (each argument of a wrong type, past a bound, not
 * one of its choices; a required one missing; one it does not declare). Properties of which a call
 * gives exactly one (`exactlyOne`, a rule their descriptions state: a root `oneOf` would say it, but
 * clients refuse one) are taken one at a time: a valid input gives exactly one, and giving both or
 * neither (`ruleCases`) is valid by the schema and refused by the tool. Values the schema cannot make
 * up, the ids of things that exist, are given as `known`; for an array, a pool its items are taken from.
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

export function validCases(
  schema: Schema,
  known: Record<string, unknown>,
  exactlyOne?: string[],
): SchemaCase[] {
  const cases: SchemaCase[] = [];
  for (const [index, choice] of choices(exactlyOne).entries()) {
    const minimal = argumentsOf(schema, known, 'low', true, choice, exactlyOne);
    const given = choice.length > 0 ? ` (with ${choice.join(', ')})` : '';
    cases.push(
      { name: `the required arguments alone${given}`, input: minimal },
      {
        name: `every argument at the low end${given}`,
        input: argumentsOf(schema, known, 'low', false, choice, exactlyOne),
      },
      {
        name: `every argument at the high end${given}`,
        input: argumentsOf(schema, known, 'high', false, choice, exactlyOne),
      },
    );
    // Each choice of a property is tried once, with the first alternative.
    if (index > 0) continue;
    for (const [name, property] of Object.entries(schema.properties ?? {})) {
      if (excluded(exactlyOne, choice).has(name)) continue;
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

export function invalidCases(
  schema: Schema,
  known: Record<string, unknown>,
  exactlyOne?: string[],
): SchemaCase[] {
  const properties = schema.properties ?? {};
  const alternatives = choices(exactlyOne);
  const cases: SchemaCase[] = [];
  for (const [name, property] of Object.entries(properties)) {
    // A property of an alternative is tried wrong in the alternative that gives it.
    const choice = alternatives.find((candidate) => !excluded(exactlyOne, candidate).has(name)) ?? [];
    const minimal = argumentsOf(schema, known, 'low', true, choice, exactlyOne);
    for (const [why, value] of invalidValues(property)) {
      cases.push({ name: `${name} ${why}`, input: { ...minimal, [name]: value } });
    }
  }
  const minimal = argumentsOf(schema, known, 'low', true, alternatives[0], exactlyOne);
  for (const name of schema.required ?? []) {
    const input = { ...minimal };
    delete input[name];
    cases.push({ name: `${name} missing`, input });
  }
  for (const name of ['unexpected', 'dataset_id', 'dataset_ids'].filter(
    (candidate) => !(candidate in properties),
  )) {
    cases.push({ name: `${name}, not declared`, input: { ...minimal, [name]: known[name] ?? 1 } });
  }
  return cases;
}

/**
 * Inputs that give none, or all, of the `exactlyOne` properties: valid by the schema, which cannot say
 * the rule, and refused by the tool.
 */
export function ruleCases(
  schema: Schema,
  known: Record<string, unknown>,
  exactlyOne: string[],
): SchemaCase[] {
  const minimal = argumentsOf(schema, known, 'low', true, [exactlyOne[0]], exactlyOne);
  const neither = { ...minimal };
  for (const name of exactlyOne) delete neither[name];
  const all = Object.assign(
    {},
    ...exactlyOne.map((name) => argumentsOf(schema, known, 'low', true, [name], exactlyOne)),
  ) as Record<string, unknown>;
  return [
    { name: `none of ${exactlyOne.join(', ')}`, input: neither },
    { name: `all of ${exactlyOne.join(', ')}`, input: all },
  ];
}

/** Each of the `exactlyOne` properties as a choice of its own, or one empty choice without them. */
function choices(exactlyOne?: string[]): string[][] {
  return exactlyOne ? exactlyOne.map((name) => [name]) : [[]];
}

/** The `exactlyOne` properties other than `choice`, which an input giving it leaves out. */
function excluded(exactlyOne: string[] | undefined, choice: string[]): Set<string> {
  return new Set((exactlyOne ?? []).filter((name) => !choice.includes(name)));
}

function argumentsOf(
  schema: Schema,
  known: Record<string, unknown>,
  end: End,
  requiredOnly: boolean,
  choice: string[] = [],
  exactlyOne?: string[],
): Record<string, unknown> {
  const required = new Set([...(schema.required ?? []), ...choice]);
  const others = excluded(exactlyOne, choice);
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
