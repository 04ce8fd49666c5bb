import { connect, type Socket } from 'node:net';
import type pg from 'pg';

/** The CancelRequest message's code (the protocol's "Canceling Requests in Progress"). */
const CANCEL_REQUEST_CODE = 80877102;
/** How long a cancel request may take to be delivered before it is given up. */
const DELIVERY_TIMEOUT_MS = 5_000;

/** What the server told the connection at start-up (BackendKeyData); node-postgres keeps it, untyped. */
interface BackendKey {
  processID?: number | null;
  secretKey?: number | null;
}

/**
 * Asks the server to cancel the statement `client` is running, as psql's Ctrl-C does: a
 * CancelRequest naming the connection's backend and its secret key, on a socket of its own. It needs
 * no free connection (a pool is full exactly when statements run long), no authentication, and
 * poolers such as PgBouncer route it to the connection it names. Resolves once the server has taken
 * the request; a backend that is not running a statement by then ignores it.
 */
export function cancelStatement(client: pg.Client): Promise<void> {
  const { processID, secretKey } = client as unknown as BackendKey;
  if (processID == null || secretKey == null) return Promise.resolve();
  const request = Buffer.alloc(16);
  request.writeInt32BE(16, 0);
  request.writeInt32BE(CANCEL_REQUEST_CODE, 4);
  request.writeInt32BE(processID, 8);
  request.writeInt32BE(secretKey, 12);
  const socket: Socket = client.host.startsWith('/')
    ? connect(`${client.host}/.s.PGSQL.${client.port}`)
    : connect(client.port, client.host);
  return new Promise((resolve, reject) => {
    socket.setTimeout(DELIVERY_TIMEOUT_MS, () => socket.destroy(new Error('cancel request timed out')));
    socket.once('connect', () => socket.end(request));
    socket.once('error', reject);
    socket.once('close', (hadError) => {
      if (!hadError) resolve();
    });
  });
}
