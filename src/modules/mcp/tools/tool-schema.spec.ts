import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { BatchSearchToolDto, SearchToolDto } from 'src/modules/mcp/dto/tool-arguments.dto.js';
import { jsonSchemaOf, withoutProperty } from 'src/modules/mcp/tools/tool-schema.js';

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

  it('gives the search tools no root oneOf, anyOf or allOf, which Anthropic’s API refuses', () => {
    for (const [dto, required] of [
      [SearchToolDto, 'query'],
      [BatchSearchToolDto, 'queries'],
    ] as const) {
      const schema = jsonSchemaOf(dto, { closed: true });
      for (const keyword of ['oneOf', 'anyOf', 'allOf']) expect(schema).not.toHaveProperty(keyword);
      expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(['dataset_id', 'dataset_ids']));
      // Neither is required by the schema: the rule is in their descriptions, and the tool refuses both or neither.
      expect(schema.required).toEqual([required]);
      expect(schema.properties.dataset_id.description).toContain('or dataset_ids');
    }
  });
});
