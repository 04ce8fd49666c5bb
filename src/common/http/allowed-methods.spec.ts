import express, { type Request } from 'express';
import { allowedMethods } from 'src/common/http/allowed-methods.js';

describe('allowedMethods', () => {
  const app = express();
  const handler = () => undefined;
  app.use(handler);
  app.get('/v1/things', handler);
  app.post('/v1/things', handler);
  app.delete('/v1/things/:id', handler);
  app.patch('/v1/things/:id', handler);
  app.get('/v1/things/:id', handler);
  app.propfind('/v1/dav', handler);
  app.all('/v1/anything', handler);
  app.route('/v1/whatever').all(handler);
  const at = (path: string) => allowedMethods({ app, path } as unknown as Request);

  it('lists the methods of every route at the path, HEAD with GET, in a fixed order', () => {
    expect(at('/v1/things')).toEqual(['GET', 'HEAD', 'POST']);
    expect(at('/v1/things/th_1')).toEqual(['GET', 'HEAD', 'PATCH', 'DELETE']);
    expect(at('/v1/dav')).toEqual(['PROPFIND']);
  });

  it('lists nothing for a path no route matches, or one a route takes with any method', () => {
    expect(at('/v1/nothing')).toEqual([]);
    expect(at('/v1/things/th_1/more')).toEqual([]);
    expect(at('/v1/whatever')).toEqual([]);
  });

  it('lists every method Node.js parses for a route of app.all, which thus never answers 405', () => {
    expect(at('/v1/anything')).toEqual(expect.arrayContaining(['GET', 'HEAD', 'PUT', 'DELETE', 'PROPFIND']));
  });

  it('skips a route whose parameter does not decode, as the router does', () => {
    expect(at('/v1/things/%E0%A4%A')).toEqual([]);
  });
});
