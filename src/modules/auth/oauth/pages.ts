import type { Response } from 'express';
import type { Scope } from 'src/modules/auth/auth.types.js';

/** Text safe to place in HTML, in an element or a quoted attribute. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** HTML with every interpolated value escaped, unless it is itself `Html` (built by this tag). */
class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0];
  values.forEach((value, i) => {
    const parts = Array.isArray(value) ? value : [value];
    out += parts.map((part) => (part instanceof Html ? part.text : escapeHtml(String(part ?? '')))).join('');
    out += strings[i + 1];
  });
  return new Html(out);
}

export const SCOPE_DESCRIPTIONS: Record<Scope, string> = {
  'datasets:read': 'See your datasets',
  'datasets:write': 'Create, change and delete datasets',
  'documents:read': 'Read the documents in your datasets',
  'documents:write': 'Add, replace, reprocess and delete documents',
  search: 'Search your datasets',
  'webhooks:read': 'See where your account sends its events',
  'webhooks:write': 'Send your account’s events to other services',
};

const STYLE = `
body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1c2430}
main{max-width:28rem;margin:4rem auto;background:#fff;padding:2rem;border-radius:8px;box-shadow:0 1px 4px #0002}
h1{font-size:1.3rem;margin-top:0}label{display:block;margin:.8rem 0 .2rem}
input[type=email],input[type=password]{width:100%;padding:.5rem;box-sizing:border-box}
button{padding:.55rem 1.2rem;margin:1rem .5rem 0 0;border-radius:4px;border:1px solid #345;cursor:pointer}
button.primary{background:#245;color:#fff}.error{color:#a11;background:#fdecec;padding:.5rem;border-radius:4px}
.muted{color:#567;font-size:.9rem}ul{padding-left:1.2rem}fieldset{border:1px solid #ccd;border-radius:4px}
.datasets{max-height:12rem;overflow:auto}`;

/**
 * Sends a page of the authorization flow. The pages embed nothing from elsewhere and may not be
 * framed (clickjacking on the consent button), nor cached.
 */
export function sendPage(response: Response, status: number, title: string, body: Html): void {
  response
    .status(status)
    .set({
      'Content-Type': 'text/html; charset=utf-8',
      'Cache-Control': 'no-store',
      'Content-Security-Policy':
        "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
      'X-Frame-Options': 'DENY',
      'Referrer-Policy': 'no-referrer',
    })
    .send(
      html`<!doctype html>
        <html lang="en">
          <head>
            <meta charset="utf-8" />
            <meta name="viewport" content="width=device-width, initial-scale=1" />
            <title>${title}</title>
            <style>
              ${new Html(STYLE)}
            </style>
          </head>
          <body>
            <main>${body}</main>
          </body>
        </html>`.text,
    );
}

export function errorPage(message: string): Html {
  return html`<h1>This authorization request cannot be completed</h1>
    <p class="error" role="alert">${message}</p>
    <p class="muted">Go back to the application you came from and try again.</p>`;
}

export function signInPage(options: {
  returnTo: string;
  clientName: string;
  email?: string;
  error?: string;
}): Html {
  return html`<h1>Sign in to continue to ${options.clientName}</h1>
    ${options.error ? html`<p class="error" role="alert">${options.error}</p>` : ''}
    <form method="post" action="/oauth/sign-in">
      <input type="hidden" name="return_to" value="${options.returnTo}" />
      <label for="email">Email</label
      ><input
        id="email"
        name="email"
        type="email"
        autocomplete="username"
        required
        value="${options.email ?? ''}"
      />
      <label for="password">Password</label
      ><input id="password" name="password" type="password" autocomplete="current-password" required />
      <button class="primary" type="submit">Sign in</button>
    </form>`;
}

export interface ConsentView {
  requestId: string;
  clientName: string;
  redirectHost: string;
  userEmail: string;
  scopes: Scope[];
  /** Requested, but beyond what the user's role holds: not granted. */
  withheld: Scope[];
  datasets: { id: string; name: string }[];
}

export function consentPage(view: ConsentView): Html {
  return html`<h1>${view.clientName} wants to use your account</h1>
    <p class="muted">
      Signed in as ${view.userEmail}. After you decide, you go back to <strong>${view.redirectHost}</strong>.
    </p>
    <p>It asks to:</p>
    <ul>
      ${view.scopes.map((scope) => html`<li>${SCOPE_DESCRIPTIONS[scope]} <span class="muted">(${scope})</span></li>`)}
    </ul>
    ${view.withheld.length > 0 ? html`<p class="muted">Your role does not allow: ${view.withheld.join(', ')}; these are not granted.</p>` : ''}
    <form method="post" action="/oauth/authorize/decision">
      <input type="hidden" name="request_id" value="${view.requestId}" />
      <fieldset>
        <legend>Datasets it may use</legend>
        <label
          ><input type="radio" name="datasets" value="all" checked /> All datasets of the account, also those
          created later</label
        >
        <label><input type="radio" name="datasets" value="chosen" /> Only these:</label>
        <div class="datasets">
          ${
            view.datasets.length === 0
              ? html`<p class="muted">The account has no datasets yet.</p>`
              : view.datasets.map(
                  (dataset) =>
                    html`<label
                      ><input type="checkbox" name="dataset_ids" value="${dataset.id}" />
                      ${dataset.name}</label
                    >`,
                )
          }
        </div>
      </fieldset>
      <button class="primary" type="submit" name="decision" value="approve">Allow</button>
      <button type="submit" name="decision" value="deny">Deny</button>
    </form>`;
}
