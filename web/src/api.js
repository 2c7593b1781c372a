// The JSON API of docs/api.md. Requests go to the page's own origin; the
// token, if any, travels in the cookie the server set.
export class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.status = status;
  }
}

export async function api(path, params = {}) {
  const url = new URL(path, location.origin);
  for (const [k, v] of Object.entries(params))
    if (v !== undefined && v !== null && v !== '') url.searchParams.set(k, String(v));
  const res = await fetch(url, { credentials: 'same-origin' });
  let body;
  try {
    body = await res.json();
  } catch {
    throw new ApiError(`${res.status} ${res.statusText} from ${path}`, res.status);
  }
  if (!res.ok) throw new ApiError(body.error || res.statusText, res.status);
  return body;
}

export const enc = encodeURIComponent;
export const runPath = (uuid, what = '') => `/api/runs/${enc(uuid)}${what ? '/' + what : ''}`;
