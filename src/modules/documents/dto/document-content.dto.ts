import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, Max, Min } from 'class-validator';
import { PageEnvelopeDto, QueryInt } from 'src/common/pagination/pagination.js';
import type { ListedChunk, PageRange } from 'src/modules/chunk-index/passages.repository.js';

/** A page of a document's text, in characters (UTF-16 code units, as the chunks' offsets count them). */
export const TEXT_PAGE = { default: 20_000, max: 100_000 } as const;
/** Chunks shown on either side of one read by its id. */
export const NEIGHBOURS = { default: 1, max: 5 } as const;

export class DocumentTextQueryDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: 2_147_483_647,
    default: 0,
    description: "Where the page starts in the document's text, in characters (a chunk's `char_start`, say)",
  })
  @QueryInt()
  @Max(2_147_483_647, { message: 'is too large' })
  @Min(0, { message: 'must be 0 or more' })
  @IsInt({ message: 'must be an integer' })
  offset: number = 0;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: TEXT_PAGE.max,
    default: TEXT_PAGE.default,
    description: 'The most characters to return',
  })
  @QueryInt()
  @Max(TEXT_PAGE.max, { message: `must be from 1 to ${TEXT_PAGE.max}` })
  @Min(1, { message: `must be from 1 to ${TEXT_PAGE.max}` })
  @IsInt({ message: 'must be an integer' })
  limit: number = TEXT_PAGE.default;
}

export class ChunkNeighboursQueryDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: NEIGHBOURS.max,
    default: NEIGHBOURS.default,
    description: 'Chunks to return on either side of this one',
  })
  @QueryInt()
  @Max(NEIGHBOURS.max, { message: `must be from 0 to ${NEIGHBOURS.max}` })
  @Min(0, { message: `must be from 0 to ${NEIGHBOURS.max}` })
  @IsInt({ message: 'must be an integer' })
  neighbours: number = NEIGHBOURS.default;
}

export class TextPageRangeDto {
  @ApiProperty({ type: 'integer', minimum: 1, example: 2, description: 'Page or slide number, 1 first' })
  page!: number;

  @ApiProperty({ type: 'integer', example: 3512, description: "Where the page's text starts" })
  char_start!: number;

  @ApiProperty({ type: 'integer', example: 7040, description: "Where the page's text ends (exclusive)" })
  char_end!: number;
}

export class DocumentTextResponseDto {
  @ApiProperty({ example: 'doc_7Yh2kQ9mWz4Lp0sVt3nB8x' })
  document_id!: string;

  @ApiProperty({
    description:
      "The page of the document's extracted text, each character at its offset in the whole: " +
      "`text[i]` is the whole's character `offset + i`, so a chunk's content is the text between its offsets. " +
      'The blank space between chunks is shown as blank characters of the same length.',
    example: 'To install, run the installer.',
  })
  text!: string;

  @ApiProperty({ type: 'integer', example: 0, description: 'Where the page starts' })
  offset!: number;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    example: null,
    description: 'The offset of the next page, to pass as `offset`; null on the last page',
  })
  next_offset!: number | null;

  @ApiProperty({ type: 'integer', example: 30, description: "The length of the document's whole text" })
  total_characters!: number;

  @ApiProperty({
    type: [TextPageRangeDto],
    nullable: true,
    description:
      'Each page (PDF) or slide (PPTX) with text, in order, and the range of the whole text its chunks cover; ' +
      'null for a document without pages',
  })
  pages!: TextPageRangeDto[] | null;
}

export class DocumentChunkDto {
  @ApiProperty({ example: 'chk_1c2R6yTq0Wn3kPz8sLb4Vd' })
  chunk_id!: string;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    example: 0,
    description: "The chunk's place in its document, 0 first",
  })
  chunk_index!: number;

  @ApiProperty({ example: 'To install, run the installer.' })
  content!: string;

  @ApiProperty({
    type: 'integer',
    example: 0,
    description: "Where the chunk starts in the document's text (`.../text`), in characters",
  })
  char_start!: number;

  @ApiProperty({ type: 'integer', example: 30, description: 'Where it ends (exclusive)' })
  char_end!: number;

  @ApiProperty({ type: 'integer', nullable: true, example: null, description: 'Page or slide, else null' })
  page!: number | null;

  @ApiProperty({
    type: 'integer',
    example: 8,
    description:
      "Tokens in the chunk, as the chunker counted them (the embedding model's tokenizer, or an estimate)",
  })
  token_count!: number;
}

export class DocumentChunkListResponseDto extends PageEnvelopeDto {
  @ApiProperty({ type: [DocumentChunkDto] })
  chunks!: DocumentChunkDto[];
}

export class ChunkWithNeighboursResponseDto {
  @ApiProperty({ type: DocumentChunkDto })
  chunk!: DocumentChunkDto;

  @ApiProperty({ type: [DocumentChunkDto], description: 'Up to `neighbours` chunks before it, in order' })
  before!: DocumentChunkDto[];

  @ApiProperty({ type: [DocumentChunkDto], description: 'Up to `neighbours` chunks after it, in order' })
  after!: DocumentChunkDto[];
}

export function toDocumentChunk(chunk: ListedChunk): DocumentChunkDto {
  return {
    chunk_id: chunk.id,
    chunk_index: chunk.ordinal,
    content: chunk.content,
    char_start: chunk.charStart,
    char_end: chunk.charEnd,
    page: chunk.page,
    token_count: chunk.tokenCount,
  };
}

export function toTextPageRange(page: PageRange): TextPageRangeDto {
  return { page: page.page, char_start: page.charStart, char_end: page.charEnd };
}

/** The chunk `chunkId` among `chunks` (in order), and those before and after it. */
export function toChunkWithNeighbours(
  chunks: ListedChunk[],
  chunkId: string,
): ChunkWithNeighboursResponseDto {
  const at = chunks.findIndex((chunk) => chunk.id === chunkId);
  return {
    chunk: toDocumentChunk(chunks[at]),
    before: chunks.slice(0, at).map(toDocumentChunk),
    after: chunks.slice(at + 1).map(toDocumentChunk),
  };
}
