import { EvaluateToolDto } from 'src/modules/mcp/dto/tool-arguments.dto.js';
import { defineTool, READ_ONLY } from 'src/modules/mcp/tools/tool.js';
import { EVALUATION_LIMITS, EvaluationResponseDto } from 'src/modules/search/dto/evaluation.dto.js';

export const evaluateTool = defineTool({
  name: 'evaluate',
  title: 'Measure retrieval on judged queries',
  description: (fixed) =>
    `How well ${fixed ? 'this dataset' : 'a dataset'} answers queries whose relevant documents you know: up to ` +
    `${EVALUATION_LIMITS.queries} queries, each with its relevant documents (by document_id, or by metadata ` +
    'values such as {"source_id": "123"}), give nDCG@10, Recall@100 and MRR@10 of keyword, semantic and hybrid ' +
    'search at several weights. For checking a model or settings; the same figures as the REST endpoint.',
  scope: 'search',
  anonymous: true,
  annotations: READ_ONLY,
  input: EvaluateToolDto,
  output: EvaluationResponseDto,
  run({ input, context, services }) {
    const { dataset_id: datasetId, ...request } = input;
    return services.evaluation.evaluate(context.caller, datasetId, request);
  },
});
