import type { Tool, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { Type } from '@nestjs/common';
import { CommonErrors } from 'src/common/errors/app-error.js';
import { AppValidationPipe } from 'src/common/validation/validation.pipe.js';
import type { Scope } from 'src/modules/auth/auth.types.js';
import type { PassagesRepository } from 'src/modules/chunk-index/passages.repository.js';
import type { DatasetsService } from 'src/modules/datasets/datasets.service.js';
import type { DocumentsRepository } from 'src/modules/documents/documents.repository.js';
import type { DocumentsService } from 'src/modules/documents/documents.service.js';
import type { McpContext } from 'src/modules/mcp/mcp-context.js';
import { McpErrors } from 'src/modules/mcp/mcp.errors.js';
import { jsonSchemaOf, type ObjectSchema, withoutProperty } from 'src/modules/mcp/tools/tool-schema.js';
import type { EvaluationService } from 'src/modules/search/evaluation/evaluation.service.js';
import type { SearchService } from 'src/modules/search/search.service.js';

/**
 * What the tools call: the services the REST routes call, with the request's caller, so that they
 * see, refuse and count what the REST API does; and what REST does not read (the passages around a
 * result, documents' text), once the caller is known to see the document.
 */
export interface ToolServices {
  search: SearchService;
  evaluation: EvaluationService;
  datasets: DatasetsService;
  documents: DocumentsService;
  passages: PassagesRepository;
  documentRows: DocumentsRepository;
}

/** What a tool hears of its call besides its arguments: how to report progress. */
export interface ToolCall {
  progress?: (done: number, total: number, message: string) => void;
}

export interface ToolRun<I> {
  input: I;
  context: McpContext;
  services: ToolServices;
  call: ToolCall;
}

/**
 * One MCP tool: what an agent is shown, the scope a call needs, its arguments and its answer as DTO
 * classes (validated with, and advertised from: `jsonSchemaOf`), and its handler.
 */
export interface ToolDefinition<I extends object = object, O extends object = object> {
  name: string;
  title: string;
  /** `fixed` at a per-dataset endpoint, whose URL names the dataset. */
  description(fixed: boolean): string;
  scope: Scope;
  /** Offered to callers without credentials (at a public dataset's endpoint). */
  anonymous: boolean;
  annotations: Omit<ToolAnnotations, 'title'>;
  /** The arguments: validated with this DTO, and advertised from it. */
  input: Type<I>;
  /**
   * A per-dataset endpoint's URL names the dataset, so that `dataset_id` is no argument there; a
   * tool whose answer there is that dataset takes none at all.
   */
  atDatasetEndpoint?: 'no-arguments';
  /** The answer, as `structuredContent`: advertised as the output schema. */
  output: Type<O>;
  run(run: ToolRun<I>): Promise<O>;
}

/** A tool definition, its handler's input and answer typed from its DTOs. */
export function defineTool<I extends object, O extends object>(
  tool: ToolDefinition<I, O>,
): ToolDefinition<I, O> {
  return tool;
}

export const READ_ONLY = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
} as const;

const NO_ARGUMENTS: ObjectSchema = { type: 'object', properties: {}, additionalProperties: false };

/** A tool as an endpoint lists it, its schemas generated from its DTOs. */
export function toolListing(tool: ToolDefinition, fixed: boolean): Tool {
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description(fixed),
    inputSchema: inputSchema(tool, fixed),
    outputSchema: jsonSchemaOf(tool.output, { closed: false }),
    annotations: { title: tool.title, ...tool.annotations },
  };
}

function inputSchema(tool: ToolDefinition, fixed: boolean): ObjectSchema {
  const schema = generalInput(tool);
  if (!fixed) return schema;
  return tool.atDatasetEndpoint === 'no-arguments'
    ? NO_ARGUMENTS
    : withoutProperty(schema, ...DATASET_FIELDS);
}

/** The arguments that name datasets, which a per-dataset endpoint's URL does instead. */
const DATASET_FIELDS = ['dataset_id', 'dataset_ids'] as const;

const validation = new AppValidationPipe();

/**
 * A call's arguments, validated as the REST route validates its body. At a per-dataset endpoint the
 * URL names the dataset, and an argument naming one is refused rather than ignored.
 */
export async function toolArguments<I extends object>(
  tool: ToolDefinition<I>,
  args: Record<string, unknown>,
  context: McpContext,
): Promise<I> {
  let body = args;
  if (context.dataset && tool.atDatasetEndpoint === 'no-arguments') {
    refuseArguments(args);
  } else if (context.dataset && takesDataset(tool)) {
    const named = DATASET_FIELDS.find((field) => field in args);
    if (named) throw McpErrors.datasetFixed(named);
    body = { ...args, dataset_id: context.dataset.id };
  }
  return (await validation.transform(body, { type: 'body', metatype: tool.input })) as I;
}

function takesDataset(tool: ToolDefinition): boolean {
  return 'dataset_id' in generalInput(tool).properties;
}

const generalInputs = new WeakMap<ToolDefinition, ObjectSchema>();

/**
 * A tool's input schema at the general endpoint, generated once (its DTO does not change), with the
 * required arguments first, as forms and agents read them.
 */
function generalInput(tool: ToolDefinition): ObjectSchema {
  let schema = generalInputs.get(tool);
  if (!schema) {
    schema = requiredFirst(jsonSchemaOf(tool.input, { closed: true }));
    generalInputs.set(tool, schema);
  }
  return schema;
}

function requiredFirst(schema: ObjectSchema): ObjectSchema {
  const required = new Set(schema.required);
  const entries = Object.entries(schema.properties);
  const properties = Object.fromEntries([
    ...entries.filter(([name]) => required.has(name)),
    ...entries.filter(([name]) => !required.has(name)),
  ]);
  return { ...schema, properties };
}

/** A tool that takes no arguments refuses any, as every tool refuses an unknown one. */
function refuseArguments(args: Record<string, unknown>): void {
  const unknown = Object.keys(args);
  if (unknown.length > 0) {
    throw CommonErrors.validation(unknown.map((field) => ({ field, issue: 'is not a known field' })));
  }
}
