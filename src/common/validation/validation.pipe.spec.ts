import { AppError } from 'src/common/errors/app-error.js';
import { AppValidationPipe } from 'src/common/validation/validation.pipe.js';
import { CreateDatasetDto, ListDatasetsQueryDto } from 'src/modules/datasets/dto/dataset.dto.js';

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
});
