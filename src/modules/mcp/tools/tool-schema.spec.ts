import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ExactlyOneOf, jsonSchemaOf, withoutProperty } from 'src/modules/mcp/tools/tool-schema.js';

class StageDto {
  @ApiProperty({ enum: ['upload', 'indexing'], example: 'upload' })
  stage!: string;
}

class ItemDto {
  @ApiProperty({ type: 'integer', minimum: 1, maximum: 9, example: 3 })
  count!: number;

  @ApiProperty({ type: String, nullable: true, description: 'A name, or null' })
  name!: string | null;

  @ApiPropertyOptional({ enum: ['a', 'b'], nullable: true })
  letter?: string | null;

  @ApiPropertyOptional({ type: StageDto, description: 'Where it stands' })
  stage?: StageDto;

  @ApiProperty({ type: 'object', additionalProperties: true })
  metadata!: Record<string, unknown>;

  @ApiPropertyOptional({ type: 'number', minimum: 0, exclusiveMinimum: true })
  weight?: number;
}

class ListDto {
  @ApiProperty({ type: [ItemDto] })
  items!: ItemDto[];

  @ApiPropertyOptional()
  dataset_id?: string;
}

class LoopDto {
  @ApiPropertyOptional({ type: () => LoopDto })
  next?: LoopDto;
}

const item = {
  type: 'object',
  properties: {
    count: { type: 'integer', minimum: 1, maximum: 9 },
    name: { type: ['string', 'null'], description: 'A name, or null' },
    letter: { type: ['string', 'null'], enum: ['a', 'b', null] },
    stage: {
      type: 'object',
      properties: { stage: { type: 'string', enum: ['upload', 'indexing'] } },
      required: ['stage'],
      description: 'Where it stands',
    },
    metadata: { type: 'object', additionalProperties: true },
    weight: { type: 'number', exclusiveMinimum: 0 },
  },
  required: ['count', 'name', 'metadata'],
};

describe('jsonSchemaOf', () => {
  it("inlines a DTO's references and says null as JSON Schema does, without OpenAPI's keywords", () => {
    const schema = jsonSchemaOf(ListDto, { closed: false });
    expect(schema).toEqual({
      type: 'object',
      properties: { items: { type: 'array', items: item }, dataset_id: { type: 'string' } },
      required: ['items'],
    });
    expect(JSON.stringify(schema)).not.toMatch(/"\$ref"|"\$defs"|"\$schema"|"nullable"|"example"/);
  });

  it('closes every object a class declares, and leaves free objects free', () => {
    const schema = jsonSchemaOf(ListDto, { closed: true });
    const items = schema.properties.items.items as typeof item & { additionalProperties: boolean };
    expect(schema.additionalProperties).toBe(false);
    expect(items.additionalProperties).toBe(false);
    expect(items.properties.stage).toMatchObject({ additionalProperties: false });
    expect(items.properties.metadata).toEqual({ type: 'object', additionalProperties: true });
  });

  it('refuses a class that holds itself, which a schema without $ref cannot say', () => {
    expect(() => jsonSchemaOf(LoopDto, { closed: false })).toThrow(/LoopDto/);
  });

  it('leaves out one property with its place among the required', () => {
    class ArgsDto {
      @ApiProperty()
      dataset_id!: string;

      @ApiProperty()
      query!: string;
    }
    expect(withoutProperty(jsonSchemaOf(ArgsDto, { closed: true }), 'dataset_id')).toEqual({
      type: 'object',
      properties: { query: { type: 'string' } },
      required: ['query'],
      additionalProperties: false,
    });
  });

  describe('ExactlyOneOf', () => {
    @ExactlyOneOf('dataset_id', 'dataset_ids')
    class SearchArgsDto {
      @ApiPropertyOptional()
      dataset_id?: string;

      @ApiPropertyOptional({ type: [String], minItems: 1, uniqueItems: true })
      dataset_ids?: string[];

      @ApiProperty()
      query!: string;
    }

    it('says the alternative as a oneOf of required properties, the root still an object', () => {
      const schema = jsonSchemaOf(SearchArgsDto, { closed: true });
      expect(schema).toMatchObject({
        type: 'object',
        required: ['query'],
        oneOf: [{ required: ['dataset_id'] }, { required: ['dataset_ids'] }],
      });
      expect(Object.keys(schema.properties)).toEqual(['dataset_id', 'dataset_ids', 'query']);
    });

    it('leaves out the alternative with the properties it chooses between', () => {
      const schema = jsonSchemaOf(SearchArgsDto, { closed: true });
      expect(withoutProperty(schema, 'dataset_id', 'dataset_ids')).toEqual({
        type: 'object',
        properties: { query: { type: 'string' } },
        required: ['query'],
        additionalProperties: false,
      });
      // One of them gone is enough: the other alone is no longer a choice.
      expect(withoutProperty(schema, 'dataset_id')).not.toHaveProperty('oneOf');
    });

    it('refuses an alternative the class does not declare', () => {
      @ExactlyOneOf('dataset_id', 'datasets')
      class TypoDto {
        @ApiPropertyOptional()
        dataset_id?: string;
      }
      expect(() => jsonSchemaOf(TypoDto, { closed: true })).toThrow(/TypoDto does not declare datasets/);
    });

    it('is not inherited: a subclass declares its own', () => {
      class WiderDto extends SearchArgsDto {}
      expect(jsonSchemaOf(WiderDto, { closed: true })).not.toHaveProperty('oneOf');
    });
  });
});
