import type { Type } from '@nestjs/common';
import { generateSchema, type ReferenceObject, type SchemaObject } from '@nestjs/swagger';

/** A JSON Schema in the part that draft-07 and 2020-12 read alike: no `$schema`, `$ref` or `$defs`. */
export type JsonSchema = { [keyword: string]: unknown };

/** An object's schema, as MCP lists a tool's input and output. */
export interface ObjectSchema extends JsonSchema {
  type: 'object';
  properties: Record<string, JsonSchema>;
  required?: string[];
}

type OpenApiSchema = SchemaObject | ReferenceObject;

/**
 * The JSON Schema of a DTO class, from the OpenAPI schema `@nestjs/swagger` makes of it for the
 * OpenAPI document (`generateSchema`, its public entry to the same factory), so that what a tool
 * advertises is what its DTO says. OpenAPI 3.0's dialect is translated: `$ref`s inlined (the SDK's
 * client compiles output schemas with a draft-07 validator, which must not meet 2020-12's `$defs`),
 * `nullable` made a type union, `example` (for people trying the REST API) left out. `closed` refuses
 * properties a class does not declare, as `AppValidationPipe` refuses unknown fields of arguments.
 */
export function jsonSchemaOf(dto: Type<unknown>, { closed }: { closed: boolean }): ObjectSchema {
  const { schema, schemas } = generateSchema(dto);
  const converted = new SchemaConverter(schemas, closed).convert(schema, [dto.name]);
  if (converted.type !== 'object') throw new Error(`${dto.name} is not described as an object`);
  const properties = (converted.properties ?? {}) as ObjectSchema['properties'];
  return { ...converted, type: 'object', properties };
}

/**
 * An object's schema less some properties, as a per-dataset endpoint lists a tool without
 * `dataset_id`.
 */
export function withoutProperty(schema: ObjectSchema, ...names: string[]): ObjectSchema {
  const properties = { ...schema.properties };
  for (const name of names) delete properties[name];
  const required = schema.required?.filter((field) => !names.includes(field));
  return { ...schema, properties, ...(required ? { required } : {}) };
}

class SchemaConverter {
  constructor(
    private readonly schemas: Record<string, SchemaObject>,
    private readonly closed: boolean,
  ) {}

  /** `path` is the classes being inlined, so that a class holding itself fails rather than loops. */
  convert(node: OpenApiSchema, path: string[]): JsonSchema {
    if ('$ref' in node) return this.inline(node.$ref, path);
    const { nullable, allOf, anyOf, oneOf, properties, items, additionalProperties, ...rest } = node;
    const schema: JsonSchema = { ...rest };
    delete schema.example;
    // A reference with a description of its own is an `allOf` of one in OpenAPI 3.0.
    if (allOf?.length === 1) Object.assign(schema, { ...this.convert(allOf[0], path), ...schema });
    else if (allOf) schema.allOf = allOf.map((part) => this.convert(part, path));
    if (anyOf) schema.anyOf = anyOf.map((part) => this.convert(part, path));
    if (oneOf) schema.oneOf = oneOf.map((part) => this.convert(part, path));
    if (items) schema.items = this.convert(items, path);
    if (properties) {
      schema.properties = Object.fromEntries(
        Object.entries(properties).map(([name, property]) => [name, this.convert(property, path)]),
      );
    }
    if (typeof additionalProperties === 'object') {
      schema.additionalProperties = this.convert(additionalProperties, path);
    } else if (additionalProperties !== undefined) {
      schema.additionalProperties = additionalProperties;
    } else if (properties && this.closed) {
      schema.additionalProperties = false;
    }
    exclusiveBounds(schema);
    return nullable ? orNull(schema) : schema;
  }

  private inline(ref: string, path: string[]): JsonSchema {
    const name = ref.replace('#/components/schemas/', '');
    const target = this.schemas[name];
    if (!target) throw new Error(`${path.join(' > ')} refers to ${ref}, which was not generated`);
    if (path.includes(name))
      throw new Error(`${path.join(' > ')} holds ${name}, which an inlined schema cannot say`);
    return this.convert(target, [...path, name]);
  }
}

/** OpenAPI 3.0's boolean `exclusiveMinimum`/`exclusiveMaximum` as JSON Schema's numeric bounds. */
function exclusiveBounds(schema: JsonSchema): void {
  for (const [exclusive, bound] of [
    ['exclusiveMinimum', 'minimum'],
    ['exclusiveMaximum', 'maximum'],
  ] as const) {
    if (schema[exclusive] === true) {
      schema[exclusive] = schema[bound];
      delete schema[bound];
    } else if (schema[exclusive] === false) delete schema[exclusive];
  }
}

/** OpenAPI 3.0's `nullable: true` as JSON Schema says it: null is one more type (and enum value). */
function orNull(schema: JsonSchema): JsonSchema {
  if (typeof schema.type !== 'string') return { anyOf: [schema, { type: 'null' }] };
  const nullable: JsonSchema = { ...schema, type: [schema.type, 'null'] };
  if (Array.isArray(schema.enum)) nullable.enum = [...(schema.enum as unknown[]), null];
  return nullable;
}
