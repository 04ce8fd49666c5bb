import { fillLocation } from 'src/common/http/created.decorator.js';

describe('fillLocation', () => {
  it('fills each field from the body, percent-encoded', () => {
    expect(
      fillLocation('/v1/datasets/{dataset_id}/documents/{document_id}', {
        dataset_id: 'ds_1',
        document_id: 'doc/2 ?',
      }),
    ).toBe('/v1/datasets/ds_1/documents/doc%2F2%20%3F');
    expect(fillLocation('/v1/auth/session', { user: {} })).toBe('/v1/auth/session');
  });

  it('throws when the body lacks a field: a route declared with the wrong template', () => {
    expect(() => fillLocation('/v1/webhooks/{webhook_id}', { id: 'wh_1' })).toThrow(/has no webhook_id/);
    expect(() => fillLocation('/v1/webhooks/{webhook_id}', null)).toThrow(/has no webhook_id/);
  });
});
