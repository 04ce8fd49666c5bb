import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { isId, newId } from 'src/common/ids/ids.js';
import {
  type ClientMetadata,
  parseClientMetadata,
  SWAGGER_UI_CLIENT_ID,
} from 'src/modules/auth/oauth/clients/client-metadata.js';
import { ClientsRepository, type OAuthClient } from 'src/modules/auth/oauth/clients/clients.repository.js';
import { OAuthErrors } from 'src/modules/auth/oauth/oauth.errors.js';
import type { OAuthParameters } from 'src/modules/auth/oauth/parameters.js';
import { matchesHash, sha256 } from 'src/modules/auth/secrets.js';

/** The registration response (RFC 7591 3.2.1): the client's id, its secret once, and its metadata. */
export type RegisteredClient = ClientMetadata & {
  client_id: string;
  client_id_issued_at: number;
  client_secret?: string;
  client_secret_expires_at?: number;
};

/** OAuth clients: registered by themselves (RFC 7591), authenticated at the token and revocation endpoints. */
@Injectable()
export class ClientsService {
  constructor(private readonly clients: ClientsRepository) {}

  async register(body: unknown): Promise<RegisteredClient> {
    const metadata = parseClientMetadata(body);
    const confidential = metadata.token_endpoint_auth_method !== 'none';
    const secret = confidential ? randomBytes(32).toString('base64url') : null;
    const client = await this.clients.insert({
      id: newId('cli'),
      secretHash: secret === null ? null : sha256(secret),
      authMethod: metadata.token_endpoint_auth_method,
      name: metadata.client_name ?? null,
      redirectUris: metadata.redirect_uris,
      metadata,
    });
    return {
      ...metadata,
      client_id: client.id,
      client_id_issued_at: Math.floor(client.createdAt.getTime() / 1000),
      // The secret never expires (0); deleting the client ends it.
      ...(secret === null ? {} : { client_secret: secret, client_secret_expires_at: 0 }),
    };
  }

  /**
   * The client for an authorization request, or null (the caller shows an error page, never a
   * redirect). A `client_id` that no client could have is not looked for.
   */
  async find(clientId: string): Promise<OAuthClient | null> {
    return isClientId(clientId) ? this.clients.find(clientId) : null;
  }

  /**
   * The client a token or revocation request comes from (RFC 6749 2.3): by HTTP Basic or by
   * `client_id` and `client_secret` in the body for a confidential client, by `client_id` alone for
   * a public one. Any failure is 401 invalid_client.
   */
  async authenticate(request: Request, params: OAuthParameters): Promise<OAuthClient> {
    const basic = parseBasic(request.headers.authorization);
    if (request.headers.authorization !== undefined && !basic) {
      throw OAuthErrors.invalidClient('The Authorization header must be HTTP Basic client credentials', true);
    }
    const bodyId = params.optional('client_id');
    const bodySecret = params.optional('client_secret');
    if (basic && (bodySecret !== undefined || (bodyId !== undefined && bodyId !== basic.id))) {
      throw OAuthErrors.invalidRequest(
        'Client credentials must be sent one way, not in the header and the body',
      );
    }
    const id = basic?.id ?? bodyId;
    const secret = basic?.secret ?? bodySecret;
    if (id === undefined) throw OAuthErrors.invalidClient('client_id is required', Boolean(basic));
    const client = await this.find(id);
    if (!client) throw OAuthErrors.invalidClient('Unknown client_id', Boolean(basic));
    if (client.secretHash === null) {
      if (secret !== undefined) throw OAuthErrors.invalidClient('This client is public: it has no secret');
      return client;
    }
    // A confidential client authenticates only the way it registered (RFC 7591 2).
    const used = basic ? 'client_secret_basic' : 'client_secret_post';
    if (secret !== undefined && used !== client.authMethod) {
      throw OAuthErrors.invalidClient(
        `This client registered ${client.authMethod}: send its credentials that way, not by ${used}`,
        Boolean(basic),
      );
    }
    if (secret === undefined || !matchesHash(secret, client.secretHash)) {
      throw OAuthErrors.invalidClient('Invalid client credentials', Boolean(basic));
    }
    return client;
  }

  list(): Promise<OAuthClient[]> {
    return this.clients.list();
  }

  async delete(clientId: string): Promise<boolean> {
    return this.clients.delete(clientId);
  }
}

/** Ours (`cli_...`), or Swagger UI's public client. */
function isClientId(value: string): boolean {
  return isId('cli', value) || value === SWAGGER_UI_CLIENT_ID;
}

/** `Authorization: Basic base64(urlencoded id ":" urlencoded secret)` (RFC 6749 2.3.1), or null. */
function parseBasic(header: string | undefined): { id: string; secret: string } | null {
  const match = /^Basic ([A-Za-z0-9+/]+=*)$/i.exec(header ?? '');
  if (!match) return null;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  try {
    return {
      id: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' ')),
      secret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' ')),
    };
  } catch {
    return null;
  }
}
