// SPDX-License-Identifier: MIT
// The dashboard's static files: the script and the style sheet, each served under a name holding a hash of its
// content, so a browser may keep it for a year (immutable) and still never runs an old script against a new page.
import { createHash } from 'node:crypto';
import { CLIENT_JS } from './client.js';
import { STYLES_CSS } from './styles.js';

export interface Asset {
  /** The path pages link to: /assets/<name>.<hash>.<ext>. */
  path: string;
  contentType: string;
  body: string;
}

function asset(name: string, extension: string, contentType: string, body: string): Asset {
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 12);
  return { path: `/assets/${name}.${hash}.${extension}`, contentType, body };
}

export const SCRIPT = asset('dashboard', 'js', 'text/javascript; charset=utf-8', CLIENT_JS);
export const STYLES = asset('dashboard', 'css', 'text/css; charset=utf-8', STYLES_CSS);

/** The asset at a path, or undefined. */
export function assetAt(path: string): Asset | undefined {
  return [SCRIPT, STYLES].find((a) => a.path === path);
}
