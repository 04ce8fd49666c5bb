import { createServer } from 'node:net';
import { AppError } from 'src/common/errors/app-error.js';
import { checkDatabaseConnection } from 'src/database/connection-check.js';

/** A port on 127.0.0.1 that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const failure = (databaseUrl: string) =>
  checkDatabaseConnection({ url: databaseUrl, connectTimeoutMs: 2_000 }).then(
    () => {
      throw new Error('connected');
    },
    (error: unknown) => error,
  );

describe('checkDatabaseConnection', () => {
  it('reports a URL with a malformed escape as unreachable, not as a URIError', async () => {
    const port = await closedPort();
    const error = await failure(`postgres://us%zzer:se%crets@127.0.0.1:${port}/d%zzb`);
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({ code: 'database_unreachable' });
    expect((error as AppError).message).toContain(`PostgreSQL at 127.0.0.1:${port}`);
    expect((error as AppError).message).not.toContain('se%crets');
  });

  it('names the Unix socket of a host parameter, where pg looked', async () => {
    const error = await failure('postgres://postgres@/things?host=/nonexistent/run/postgresql');
    expect(error).toMatchObject({ code: 'database_unreachable' });
    expect((error as AppError).message).toContain(
      'PostgreSQL at the Unix socket /nonexistent/run/postgresql/.s.PGSQL.5432',
    );
    expect((error as AppError).message).toContain('no socket there');
  });

  it('names the host of a host parameter over the URL’s', async () => {
    const port = await closedPort();
    const error = await failure(`postgres://postgres@ignored.invalid/things?host=127.0.0.1&port=${port}`);
    expect((error as AppError).message).toContain(`PostgreSQL at 127.0.0.1:${port}`);
  });
});
