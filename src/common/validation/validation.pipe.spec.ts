import { AppError } from 'src/common/errors/app-error.js';
import { AppValidationPipe } from 'src/common/validation/validation.pipe.js';
import { CreateDatasetDto, ListDatasetsQueryDto } from 'src/modules/datasets/dto/dataset.dto.js';
import { EvaluationRequestDto } from 'src/modules/search/dto/evaluation.dto.js';

describe('AppValidationPipe', () => {
  const pipe = new AppValidationPipe();
  const body = (value: unknown) => pipe.transform(value, { type: 'body', metatype: CreateDatasetDto });

  async function errorOf(promise: Promise<unknown>): Promise<AppError> {
    try {
      await promise;
    } catch (error) {
      if (error instanceof AppError) return error;
      throw error;
    }
    throw new Error('expected a validation error');
  }

  it('returns a typed, trimmed DTO for a valid body', async () => {
    const dto = await body({ name: '  Docs ', is_public: true });
    expect(dto).toBeInstanceOf(CreateDatasetDto);
    expect(dto).toMatchObject({ name: 'Docs', is_public: true });
  });

  it('lets a field-specific code win over validation_error, and lists every issue', async () => {
    const error = await errorOf(body({ name: '', is_public: 'no' }));
    expect(error.status).toBe(400);
    expect(error.code).toBe('invalid_name');
    expect(error.details).toMatchObject({
      field: 'name',
      errors: expect.arrayContaining([
        { field: 'name', issue: 'must be 1-200 characters after trimming' },
        { field: 'is_public', issue: 'must be a boolean' },
      ]),
    });
  });

  it('names the items of nested arrays by their index, as the other checks of a body do', async () => {
    const error = await errorOf(
      pipe.transform(
        {
          queries: [{ query: 'a', relevant: [{ document_id: 'doc_1' }, { document_id: 'doc_2', grade: 0 }] }],
        },
        { type: 'body', metatype: EvaluationRequestDto },
      ),
    );
    expect(error.details).toMatchObject({
      field: 'queries[0].relevant[1].grade',
      issue: 'must be an integer from 1 to 100',
    });
  });

  it('treats a missing body as an empty object', async () => {
    const error = await errorOf(body(undefined));
    expect(error.details).toMatchObject({ field: 'name', issue: 'is required' });
  });

  it('converts and checks query strings', async () => {
    const query = await pipe.transform(
      { limit: '5', offset: '10' },
      { type: 'query', metatype: ListDatasetsQueryDto },
    );
    expect(query).toMatchObject({ limit: 5, offset: 10, sort: '-created_at' });
    const error = await errorOf(
      pipe.transform({ limit: '1.5' }, { type: 'query', metatype: ListDatasetsQueryDto }),
    );
    expect(error).toMatchObject({
      code: 'validation_error',
      details: { field: 'limit', issue: 'must be an integer' },
    });
  });

  it.each(['0x10', '1e1', ' 3 ', ''])(
    'reads only decimal digits as a query-string integer, not %j',
    async (limit) => {
      const error = await errorOf(
        pipe.transform({ limit }, { type: 'query', metatype: ListDatasetsQueryDto }),
      );
      expect(error.details).toMatchObject({ field: 'limit' });
    },
  );

  it.each(['toString', 'hasOwnProperty'])(
    'refuses an unknown field named %s, which class-transformer would leave out unseen',
    async (field) => {
      const error = await errorOf(body({ name: 'Docs', [field]: 1 }));
      expect(error).toMatchObject({
        code: 'validation_error',
        details: { field, issue: 'is not a known field' },
      });
    },
  );

  it.each([
    ['{"name": "Docs", "__proto__": 1}', '__proto__'],
    ['{"name": "Docs", "metadata": {"a": {"constructor": 1}}}', 'metadata.a.constructor'],
    ['{"name": "Docs", "metadata": {"tags": [{"prototype": 1}]}}', 'metadata.tags[0].prototype'],
  ])(
    "refuses %s, whose reserved key Nest would delete silently, with its field's code",
    async (json, field) => {
      const error = await errorOf(body(JSON.parse(json)));
      expect(error).toMatchObject({
        code: field.startsWith('metadata') ? 'invalid_metadata' : 'validation_error',
        details: { field },
      });
    },
  );

  it('keeps free-form metadata as sent, keys named like Object.prototype members included', async () => {
    const metadata = { toString: 't', valueOf: 1 };
    expect(((await body({ name: 'Docs', metadata })) as CreateDatasetDto).metadata).toEqual({
      toString: 't',
      valueOf: 1,
    });
  });
});
