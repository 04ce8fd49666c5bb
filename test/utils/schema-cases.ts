/**
 * Inputs derived from a tool's advertised input schema: those it declares valid (the required
 * arguments alone, every argument at either end of its range, each choice of an enum, null where
 * null is allowed) and those it declares invalid (each argument of a wrong type, past a bound, not
 * one of its choices; a required one missing; one it does not declare). Values the schema cannot
 * make up, the ids of things that exist, are given as `known`.
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
  const minimal = argumentsOf(schema, known, 'low', true);
  const cases: SchemaCase[] = [
    { name: 'the required arguments alone', input: minimal },
    { name: 'every argument at the low end', input: argumentsOf(schema, known, 'low', false) },
    { name: 'every argument at the high end', input: argumentsOf(schema, known, 'high', false) },
  ];
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    for (const choice of property.enum ?? []) {
      cases.push({ name: `${name}: ${JSON.stringify(choice)}`, input: { ...minimal, [name]: choice } });
    }
    if (typesOf(property).includes('null')) {
      cases.push({ name: `${name}: null`, input: { ...minimal, [name]: null } });
    }
  }
  return cases;
}

export function invalidCases(schema: Schema, known: Record<string, unknown>): SchemaCase[] {
  const minimal = argumentsOf(schema, known, 'low', true);
  const properties = schema.properties ?? {};
  const cases: SchemaCase[] = [];
  for (const [name, property] of Object.entries(properties)) {
    for (const [why, value] of invalidValues(property)) {
      cases.push({ name: `${name} ${why}`, input: { ...minimal, [name]: value } });
    }
  }
  for (const name of schema.required ?? []) {
    const input = { ...minimal };
    delete input[name];
    cases.push({ name: `${name} missing`, input });
  }
  for (const name of ['unexpected', 'dataset_id'].filter((candidate) => !(candidate in properties))) {
    cases.push({ name: `${name}, not declared`, input: { ...minimal, [name]: known[name] ?? 1 } });
  }
  return cases;
}

function argumentsOf(
  schema: Schema,
  known: Record<string, unknown>,
  end: End,
  requiredOnly: boolean,
): Record<string, unknown> {
  const required = new Set(schema.required ?? []);
  return Object.fromEntries(
    Object.entries(schema.properties ?? {})
      .filter(([name]) => !requiredOnly || required.has(name))
      .map(([name, property]) => [name, name in known ? known[name] : sample(property, end)]),
  );
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
    case 'array':
      return repeat(schema.items ?? {}, low ? (schema.minItems ?? 0) : (schema.maxItems ?? 1), end);
    case 'object':
      return schema.properties ? argumentsOf(schema, {}, end, false) : {};
    case undefined:
      return 'x';
  }
}

function repeat(items: Schema, count: number, end: End): unknown[] {
  return Array.from({ length: count }, () => sample(items, end));
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
  if (schema.minItems) values.push(['with too few items', repeat(items, schema.minItems - 1, 'low')]);
  if (schema.maxItems !== undefined)
    values.push(['with too many items', repeat(items, schema.maxItems + 1, 'low')]);
  if (schema.items) {
    for (const [why, value] of invalidValues(schema.items)) values.push([`with an item ${why}`, [value]]);
  }
  return values;
}
