import { Body, Controller, Get, Inject, Post, Query, Req, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { AppError } from 'src/common/errors/app-error.js';
import { Accepts } from 'src/common/http/request-body.interceptor.js';
import { CORE_CONFIG, type CoreConfig } from 'src/config/core.config.js';
import { SESSIONS_CONFIG, type SessionsConfig } from 'src/modules/auth/sessions/sessions.config.js';
import { Public, SignedIn } from 'src/modules/auth/auth.decorators.js';
import {
  AuthorizationPageError,
  AuthorizationRedirectError,
  AuthorizationService,
  grantable,
} from 'src/modules/auth/oauth/authorization.service.js';
import { DatasetDirectorySeam } from 'src/modules/auth/oauth/dataset-directory.seam.js';
import { OAuthPageExceptionFilter } from 'src/modules/auth/oauth/oauth.errors.js';
import { consentPage, errorPage, sendPage, signInPage } from 'src/modules/auth/oauth/pages.js';
import { serviceBase } from 'src/modules/auth/oauth/resources.js';
import { allowedOrigins, crossSiteIssue } from 'src/modules/auth/sessions/csrf.js';
import { signInBrowser } from 'src/modules/auth/sessions/browser-sign-in.js';
import { readCookie, sessionCookieName } from 'src/modules/auth/sessions/session-cookie.js';
import {
  SessionsService,
  type SignedIn as SignedInPerson,
} from 'src/modules/auth/sessions/sessions.service.js';

const FORM = 'application/x-www-form-urlencoded';
const AUTHORIZE_PATH = '/oauth/authorize';

/**
 * The authorization endpoint and the pages a person sees there: sign-in (when the browser has no
 * session) and consent. These answer a browser, so their errors are pages; only once the client and
 * its redirect URI are established do errors go back to the client (RFC 6749 4.1.2.1).
 */
@ApiExcludeController()
@Controller('oauth')
@UseFilters(OAuthPageExceptionFilter)
export class AuthorizeController {
  constructor(
    private readonly authorization: AuthorizationService,
    private readonly sessions: SessionsService,
    private readonly datasets: DatasetDirectorySeam,
    @Inject(CORE_CONFIG) private readonly core: CoreConfig,
    @Inject(SESSIONS_CONFIG) private readonly sessionsConfig: SessionsConfig,
  ) {}

  @Get('authorize')
  @Public()
  async authorize(
    @Query() query: Record<string, unknown>,
    @Req() request: Request,
    @Res() response: Response,
  ): Promise<void> {
    const base = serviceBase(request, this.core);
    const signedIn = await this.currentSession(request);
    let checked;
    try {
      checked = await this.authorization.check(query, base);
    } catch (error) {
      return this.answerRefusal(response, error, signedIn);
    }
    if (!signedIn) {
      return sendPage(
        response,
        200,
        'Sign in',
        signInPage({ returnTo: request.originalUrl, clientName: checked.clientName }),
      );
    }
    const requestId = await this.authorization.awaitConsent(checked, signedIn.user);
    sendPage(
      response,
      200,
      `Allow ${checked.clientName}?`,
      consentPage({
        requestId,
        clientName: checked.clientName,
        redirectHost: new URL(checked.redirectUri).host,
        userEmail: signedIn.user.email,
        scopes: grantable(checked.scopes, signedIn.user),
        withheld: checked.scopes.filter((scope) => !grantable([scope], signedIn.user).length),
        datasets: await this.datasets.namesOf(signedIn.user.accountId),
      }),
    );
  }

  /** The sign-in form of the authorization flow; on success, back to the authorization request. */
  @Post('sign-in')
  @Public()
  @Accepts(FORM)
  async signIn(
    @Body() body: Record<string, unknown>,
    @Req() request: Request,
    @Res() response: Response,
  ): Promise<void> {
    const text = (name: string) => (typeof body[name] === 'string' ? body[name] : '');
    const returnTo = text('return_to');
    // Only ever back into the authorization endpoint: never an open redirect to elsewhere.
    if (!returnTo.startsWith(`${AUTHORIZE_PATH}?`)) {
      return sendPage(
        response,
        400,
        'Error',
        errorPage('The sign-in form was not sent from an authorization request.'),
      );
    }
    const issue = crossSiteIssue(request, allowedOrigins(request, this.sessionsConfig, this.core), {
      anonymous: true,
    });
    if (issue) return sendPage(response, 403, 'Error', errorPage(`Cross-site request refused: ${issue}`));
    try {
      await signInBrowser(
        this.sessions,
        this.sessionsConfig,
        { request, response },
        {
          email: text('email'),
          password: text('password'),
        },
      );
      response.redirect(303, returnTo);
    } catch (error) {
      if (!(error instanceof AppError) || error.status >= 500) throw error;
      if (error.headers) response.set(error.headers);
      sendPage(
        response,
        error.status,
        'Sign in',
        signInPage({ returnTo, clientName: 'the application', email: text('email'), error: error.message }),
      );
    }
  }

  /**
   * The consent form's answer: a cookie-authenticated POST, so the guard has refused it unless it
   * comes from our own page (Fetch Metadata), and it names a consent page shown to this very user.
   */
  @Post('authorize/decision')
  @SignedIn()
  @Accepts(FORM)
  async decide(
    @Body() body: Record<string, unknown>,
    @Req() request: Request,
    @Res() response: Response,
  ): Promise<void> {
    const signedIn = request.signedIn!;
    const chosen = body.datasets === 'chosen';
    const ids = [body.dataset_ids ?? []].flat().filter((id): id is string => typeof id === 'string');
    let datasetIds: string[] | null = null;
    if (chosen) {
      const own = new Set(
        (await this.datasets.namesOf(signedIn.user.accountId)).map((dataset) => dataset.id),
      );
      datasetIds = [...new Set(ids.filter((id) => own.has(id)))];
    }
    const redirect = await this.authorization.decide(
      typeof body.request_id === 'string' ? body.request_id : '',
      signedIn.user,
      { approve: body.decision === 'approve', datasetIds },
      serviceBase(request, this.core),
    );
    if (!redirect) {
      return sendPage(
        response,
        400,
        'Error',
        errorPage('This consent page has expired or was answered already. Start again from the application.'),
      );
    }
    response.redirect(303, redirect);
  }

  private async answerRefusal(response: Response, error: unknown, signedIn: SignedInPerson | null) {
    if (error instanceof AuthorizationRedirectError) {
      if (await this.authorization.mayRedirectRefusal(error, signedIn?.user ?? null)) {
        return response.redirect(302, error.redirectTo);
      }
      return sendPage(
        response,
        400,
        'Error',
        errorPage(`The application sent a request this service cannot take: ${error.message}.`),
      );
    }
    if (error instanceof AuthorizationPageError)
      return sendPage(response, 400, 'Error', errorPage(error.message));
    throw error;
  }

  /** The browser's session, if it has one that is still good. */
  private async currentSession(request: Request): Promise<SignedInPerson | null> {
    const cookie = readCookie(request, sessionCookieName(this.sessionsConfig.secureCookie));
    if (cookie === undefined) return null;
    try {
      return await this.sessions.authenticate(cookie);
    } catch (error) {
      if (error instanceof AppError && error.status === 401) return null;
      throw error;
    }
  }
}
