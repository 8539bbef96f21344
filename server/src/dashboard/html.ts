// SPDX-License-Identifier: MIT
// HTML built from tagged templates: every interpolated value is escaped unless it is itself an Html fragment made by
// `markup`, so a kernel's name, source or message (untrusted input) can only ever land in a page as text. There is no
// way to turn an arbitrary string into Html here: markup comes from templates in this folder only. (The tag is not
// called `html` because Prettier would then reformat the templates as HTML, changing the pages it produces.)

/** A fragment of trusted markup (made by `markup`). */
export class Html {
  readonly #text: string;

  /** @internal Only `markup` and `joinHtml` make fragments. */
  constructor(text: string) {
    this.#text = text;
  }

  toString(): string {
    return this.#text;
  }
}

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text as HTML text or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

/** What a template may interpolate: text (escaped), fragments, lists of either; null, undefined and false vanish. */
export type HtmlValue = Html | string | number | boolean | null | undefined | readonly HtmlValue[];

function render(value: HtmlValue): string {
  if (value instanceof Html) return value.toString();
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

/** A template whose interpolations are escaped (fragments and lists of fragments are kept as they are). */
export function markup(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new Html(out);
}

/** Fragments and text joined by a separator (itself text, escaped). */
export function joinHtml(values: readonly HtmlValue[], separator: string): Html {
  return new Html(values.map(render).join(escapeHtml(separator)));
}
