// SPDX-License-Identifier: MIT
// Dimension expressions: the small language in which a submission gives its launch over a problem's named dimensions
// (grid: 'ceil(n / 256)', sharedMemBytes: '4 * k', the m*k of f32[m*k]), evaluated once per case of the problem.
// The text comes from untrusted clients of the evaluation service, so it is read by a parser of its own (a tokenizer,
// then recursive descent; no eval, no Function), every cost of which is bounded (DIM_EXPR_LIMITS), each bound failing
// with its own message. Values are exact BigInt rationals, so that ceil(n / 256) is the ceiling of the true quotient,
// not of a rounded double, and no intermediate is allowed past maxBits, which keeps every operation cheap.
//
// The grammar, loosest first; the operators of a level associate left:
//   expr    = sum { '<<' sum }                     1 << 20; looser than +, as in C and Python: 1 << n + 1 is 1 << (n+1)
//   sum     = product { ('+' | '-') product }
//   product = unary { ('*' | '/' | '%') unary }    a / b exact; a % b = a - b * floor(a / b) (the sign of b, as Python)
//   unary   = '-' unary | primary
//   primary = integer | name | call | '(' expr ')'
//   call    = ceil(a) | floor(a) | min(a, ...) | max(a, ...) | cdiv(a, b)     cdiv(a, b) = ceil(a / b)
//   integer = decimal digits, '_' allowed between two of them (1_048_576); no leading zero (C reads 010 as 8)
//   name    = [A-Za-z_][A-Za-z0-9_]*, other than the five functions' names
// Whitespace (space, tab, line breaks) may stand between tokens. There is no unary '+', no '>>', no hex, no exponent:
// what a launch needs, and nothing a reader could take two ways.
import { checkInt, checkObject, checkOptions, rangeError, typeError } from '../core/index.js';

/**
 * The bounds every dimension expression is held to, so that text from an untrusted client costs little to reject:
 * each has its own RangeError from parseDimExpr() or evalDimExpr().
 */
export const DIM_EXPR_LIMITS = Object.freeze({
  /** The longest text, in UTF-16 code units. */
  maxChars: 256,
  /** The deepest nesting of parentheses, calls and unary minus. */
  maxDepth: 32,
  /** The most tokens (numbers, names, operators, parentheses, commas). */
  maxTokens: 128,
  /** The largest integer literal: Number.MAX_SAFE_INTEGER. */
  maxLiteral: Number.MAX_SAFE_INTEGER,
  /** The largest shift amount of `a << b`. */
  maxShift: 64,
  /** Every intermediate value's numerator and denominator stay below 2^maxBits in magnitude. */
  maxBits: 128,
});

/**
 * A parsed dimension expression (parseDimExpr()): its text and the dimension names it uses. It carries no value of
 * its own; evalDimExpr() gives it one per case.
 */
export interface DimExpr {
  /** The text parsed (a number given to parseDimExpr() is written in decimal). */
  readonly text: string;
  /** The dimension names the expression uses, each once, in the order they first appear ('ceil(n / b)': n, b). */
  readonly names: readonly string[];
}

/** What evalDimExpr() accepts of a value and how messages name it. */
export interface DimEvalOptions {
  /** What the expression is, as messages name it ('job.grid[0]'); default: 'the dimension expression'. */
  label?: string;
  /** The least value accepted: 1 for a grid or block dimension, 0 for a byte count; default -(2^53 - 1). */
  min?: number;
  /** The greatest value accepted; default 2^53 - 1. */
  max?: number;
}

type Fn = 'ceil' | 'floor' | 'min' | 'max' | 'cdiv';
type BinaryOp = '+' | '-' | '*' | '/' | '%' | '<<';

/** A node of the tree, with `at` its first character's index in the text (for messages). */
type Node =
  | { kind: 'int'; value: bigint; at: number }
  | { kind: 'name'; name: string; at: number }
  | { kind: 'neg'; operand: Node; at: number }
  | { kind: 'op'; op: BinaryOp; left: Node; right: Node; at: number }
  | { kind: 'call'; fn: Fn; args: Node[]; at: number };

/** Each function with its number of arguments: [least, most]. */
const FUNCTIONS: Readonly<Record<Fn, readonly [number, number]>> = {
  ceil: [1, 1],
  floor: [1, 1],
  min: [1, Infinity],
  max: [1, Infinity],
  cdiv: [2, 2],
};
const isFn = (name: string): name is Fn => Object.hasOwn(FUNCTIONS, name);
const FN_LIST = 'ceil, floor, min, max, cdiv';

const DEFAULT_LABEL = 'the dimension expression';
const OPERAND = "an operand (a number, a name, a call such as ceil(n / 256), or '(')";

/** The trees of the expressions parseDimExpr() made; a copy of one (JSON, structuredClone) is parsed again. */
const trees = new WeakMap<DimExpr, Node>();

// ---------------------------------------------------------------------------------------------------------------
// Messages

/** The text as a message shows it: one column per code unit, anything but printable ASCII a replacement mark. */
function shown(text: string): string {
  return text.replace(/[\t\n\r]/g, ' ').replace(/[^\x20-\x7e]/g, '\ufffd');
}

/** The text with a caret under index `at`, indented, for the end of a syntax error's message. */
function caret(text: string, at: number): string {
  return `\n  ${shown(text)}\n  ${' '.repeat(at)}^`;
}

/** Where a syntax error is: 'the dimension expression at column 7'. */
const where = (label: string, at: number): string => `${label} at column ${at + 1}`;

/** A character as a message names it: '#', or U+00A0 where it would not print. */
function charName(text: string, at: number): string {
  const c = text[at]!;
  if (/^[\x21-\x7e]$/.test(c)) return `'${c}'`;
  return `U+${text.codePointAt(at)!.toString(16).toUpperCase().padStart(4, '0')}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Tokens

interface Token {
  kind: 'int' | 'name' | 'punct' | 'end';
  /** The token's text ('' for the end). */
  text: string;
  at: number;
  /** An int token's value. */
  value?: bigint;
}

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
const isNameStart = (c: string | undefined): boolean =>
  c !== undefined && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_');
const isNameChar = (c: string | undefined): boolean => isNameStart(c) || isDigit(c);
const isSpace = (c: string): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\r';
const PUNCT = new Set(['+', '-', '*', '/', '%', '(', ')', ',']);

function describeToken(t: Token): string {
  switch (t.kind) {
    case 'end':
      return 'the end of the expression';
    case 'int':
      return `the number ${t.text}`;
    case 'name':
      return `the name '${t.text}'`;
    case 'punct':
      return `'${t.text}'`;
  }
}

/** The tokens of `text`, ending with an 'end' token; at most maxTokens besides it. */
function tokenize(text: string, label: string): Token[] {
  const tokens: Token[] = [];
  const syntax = (expected: string, received: string, at: number): TypeError =>
    new TypeError(`Expected ${expected} for ${where(label, at)} but received ${received}${caret(text, at)}`);
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (isSpace(c)) {
      i++;
      continue;
    }
    if (tokens.length === DIM_EXPR_LIMITS.maxTokens) {
      throw new RangeError(
        `Expected at most ${DIM_EXPR_LIMITS.maxTokens} tokens (numbers, names, operators, parentheses, commas) ` +
          `for ${where(label, i)} but received more${caret(text, i)}`,
      );
    }
    const at = i;
    if (isDigit(c)) {
      // A literal runs over digits and single '_' between digits; whatever name character follows (2n, 1e6, 0x10,
      // 1__0, 4k) makes the whole run one bad literal, named as such rather than as a number then a name.
      let digits = '';
      while (isDigit(text[i]) || (text[i] === '_' && isDigit(text[i - 1]) && isDigit(text[i + 1]))) {
        if (text[i] !== '_') digits += text[i];
        i++;
      }
      let end = i;
      while (isNameChar(text[end])) end++;
      const word = text.slice(at, end);
      const form = "a decimal integer (digits, a single '_' between two of them, no leading zero)";
      if (end > i) throw syntax(form, `'${word.slice(0, 40)}'`, at);
      if (digits.length > 1 && digits.startsWith('0')) throw syntax(form, `'${word.slice(0, 40)}'`, at);
      // Compared as digits first: a long run never becomes a BigInt.
      const max = String(DIM_EXPR_LIMITS.maxLiteral);
      if (digits.length > max.length || (digits.length === max.length && digits > max)) {
        throw new RangeError(
          `Expected an integer literal of at most ${max} for ${where(label, at)} but received ` +
            `${digits.length > 40 ? `${digits.slice(0, 40)}… (${digits.length} digits)` : digits}${caret(text, at)}`,
        );
      }
      tokens.push({ kind: 'int', text: word, at, value: BigInt(digits) });
    } else if (isNameStart(c)) {
      while (isNameChar(text[i])) i++;
      tokens.push({ kind: 'name', text: text.slice(at, i), at });
    } else if (c === '<') {
      if (text[i + 1] !== '<') throw syntax("'<<'", charName(text, at), at);
      tokens.push({ kind: 'punct', text: '<<', at });
      i += 2;
    } else if (PUNCT.has(c)) {
      tokens.push({ kind: 'punct', text: c, at });
      i++;
    } else {
      throw syntax(`a number, a name or one of + - * / % << ( ) ,`, charName(text, at), at);
    }
  }
  tokens.push({ kind: 'end', text: '', at: text.length });
  return tokens;
}

// ---------------------------------------------------------------------------------------------------------------
// Parsing

class Parser {
  private pos = 0;
  private depth = 0;
  readonly names: string[] = [];

  constructor(
    private readonly text: string,
    private readonly tokens: readonly Token[],
    private readonly label: string,
  ) {}

  private peek(): Token {
    return this.tokens[this.pos]!;
  }

  private next(): Token {
    const t = this.tokens[this.pos]!;
    if (t.kind !== 'end') this.pos++;
    return t;
  }

  private isPunct(text: string): boolean {
    const t = this.peek();
    return t.kind === 'punct' && t.text === text;
  }

  private syntax(expected: string, t: Token = this.peek()): TypeError {
    return new TypeError(
      `Expected ${expected} for ${where(this.label, t.at)} but received ${describeToken(t)}${caret(this.text, t.at)}`,
    );
  }

  /** One level deeper (a parenthesis, a call, a unary minus), within maxDepth. */
  private enter(at: number): void {
    if (++this.depth > DIM_EXPR_LIMITS.maxDepth) {
      throw new RangeError(
        `Expected at most ${DIM_EXPR_LIMITS.maxDepth} levels of nesting (parentheses, calls, unary minus) for ` +
          `${where(this.label, at)} but received deeper nesting${caret(this.text, at)}`,
      );
    }
  }

  private expect(punct: string, expected: string): void {
    if (!this.isPunct(punct)) throw this.syntax(expected);
    this.next();
  }

  /** The whole text as one expression. */
  parse(): Node {
    const node = this.expr();
    if (this.peek().kind !== 'end') throw this.syntax('an operator (+ - * / % <<) or the end of the expression');
    return node;
  }

  /** The levels of binary operators, loosest first (the grammar at the top of the file). */
  private binary(level: number): Node {
    const ops = BINARY_LEVELS[level];
    if (ops === undefined) return this.unary();
    let left = this.binary(level + 1);
    for (let t = this.peek(); t.kind === 'punct' && ops.includes(t.text); t = this.peek()) {
      this.next();
      const right = this.binary(level + 1);
      left = { kind: 'op', op: t.text as BinaryOp, left, right, at: t.at };
    }
    return left;
  }

  private expr(): Node {
    return this.binary(0);
  }

  private unary(): Node {
    const t = this.peek();
    if (t.kind === 'punct' && t.text === '-') {
      this.next();
      this.enter(t.at);
      const operand = this.unary();
      this.depth--;
      return { kind: 'neg', operand, at: t.at };
    }
    return this.primary();
  }

  private primary(): Node {
    const t = this.next();
    if (t.kind === 'int') return { kind: 'int', value: t.value!, at: t.at };
    if (t.kind === 'name') {
      if (this.isPunct('(')) {
        if (!isFn(t.text)) throw this.syntax(`a function (${FN_LIST})`, t);
        return this.call(t.text, t.at);
      }
      if (isFn(t.text)) throw this.syntax(`'(' after the function ${t.text}`);
      if (!this.names.includes(t.text)) this.names.push(t.text);
      return { kind: 'name', name: t.text, at: t.at };
    }
    if (t.kind === 'punct' && t.text === '(') {
      this.enter(t.at);
      const node = this.expr();
      this.expect(')', `')' to close the '(' at column ${t.at + 1}`);
      this.depth--;
      return node;
    }
    throw this.syntax(OPERAND, t);
  }

  private call(fn: Fn, at: number): Node {
    this.next(); // '('
    this.enter(at);
    const args: Node[] = [];
    if (!this.isPunct(')')) {
      args.push(this.expr());
      while (this.isPunct(',')) {
        this.next();
        args.push(this.expr());
      }
    }
    this.expect(')', `',' or ')' to close the call of ${fn} at column ${at + 1}`);
    this.depth--;
    const [least, most] = FUNCTIONS[fn];
    if (args.length < least || args.length > most) {
      const wanted = least === most ? `${least} argument${least === 1 ? '' : 's'}` : `at least ${least} argument`;
      throw new TypeError(
        `Expected ${wanted} to ${fn} for ${where(this.label, at)} but received ${args.length}${caret(this.text, at)}`,
      );
    }
    return { kind: 'call', fn, args, at };
  }
}

const BINARY_LEVELS: readonly (readonly string[])[] = [['<<'], ['+', '-'], ['*', '/', '%']];

/**
 * Parses a dimension expression: integer arithmetic over a problem's named dimensions (`'ceil(n / 256)'`,
 * `'4 * k'`, `'1 << 20'`, `'min(m, 1024)'`), as a submission gives its launch. Nothing is evaluated here, so a problem
 * can check {@link DimExpr.names} against its dimensions before anything runs; {@link evalDimExpr} gives the value.
 *
 * The grammar: non-negative decimal integers (`_` allowed between digits, as in `1_048_576`; no leading zeros), names
 * (`[A-Za-z_][A-Za-z0-9_]*`), `+ - * / %`, `<<`, unary minus, parentheses, and the calls `ceil(a)`, `floor(a)`,
 * `min(a, ...)`, `max(a, ...)` and `cdiv(a, b)` (= `ceil(a / b)`). Precedence as in C and Python: `* / %` bind
 * tighter than `+ -`, which bind tighter than `<<`; each level associates left. `/` is exact division (`7 / 2` is
 * 7/2, so `ceil(7 / 2)` is 4), and `a % b` is `a - b * floor(a / b)`. The text is held to {@link DIM_EXPR_LIMITS}.
 *
 * @param text The expression, or a safe integer (a number, written in decimal: `256` as `'256'`).
 * @param label What the expression is, as messages name it ('job.grid[0]'); default 'the dimension expression'.
 * @throws TypeError when `text` is neither a string nor a number, or does not follow the grammar; the message gives
 *   the column and shows the text with a caret under it.
 * @throws RangeError when `text` is a number that is not a safe integer, or exceeds one of {@link DIM_EXPR_LIMITS}
 *   (length, tokens, nesting, a literal's size).
 * @example parseDimExpr('ceil(n / 256)') // { text: 'ceil(n / 256)', names: ['n'] }
 * @example parseDimExpr('ceil(n / ') // TypeError: Expected an operand (...) for the dimension expression at column
 * // 10 but received the end of the expression
 */
export function parseDimExpr(text: string | number, label: string = DEFAULT_LABEL): DimExpr {
  if (typeof label !== 'string') throw typeError('the label of a dimension expression', 'a string', label);
  if (typeof text === 'number') {
    if (!Number.isSafeInteger(text))
      throw rangeError(label, "a string such as 'ceil(n / 256)' or a safe integer", text);
    text = String(text);
  } else if (typeof text !== 'string') {
    throw typeError(label, "a string such as 'ceil(n / 256)' or a safe integer", text);
  }
  if (text.length > DIM_EXPR_LIMITS.maxChars) {
    throw new RangeError(
      `Expected at most ${DIM_EXPR_LIMITS.maxChars} characters for ${label} but received ${text.length}`,
    );
  }
  const parser = new Parser(text, tokenize(text, label), label);
  const root = parser.parse();
  const expr: DimExpr = Object.freeze({ text, names: Object.freeze(parser.names) });
  trees.set(expr, root);
  return expr;
}

// ---------------------------------------------------------------------------------------------------------------
// Evaluation

/** An exact rational: d > 0 and gcd(|n|, d) = 1, so equal values have equal fields. */
interface Rational {
  n: bigint;
  d: bigint;
}

const BIT_LIMIT = 1n << BigInt(DIM_EXPR_LIMITS.maxBits);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const abs = (x: bigint): bigint => (x < 0n ? -x : x);

function gcd(a: bigint, b: bigint): bigint {
  a = abs(a);
  b = abs(b);
  while (b !== 0n) [a, b] = [b, a % b];
  return a;
}

function rational(n: bigint, d = 1n): Rational {
  if (d < 0n) [n, d] = [-n, -d];
  const g = gcd(n, d);
  return g > 1n ? { n: n / g, d: d / g } : { n, d };
}

/** The greatest integer ≤ n/d, for d > 0 (BigInt division truncates toward zero). */
function floorOf(x: Rational): bigint {
  const q = x.n / x.d;
  return x.n < 0n && q * x.d !== x.n ? q - 1n : q;
}

const compare = (a: Rational, b: Rational): number => {
  const l = a.n * b.d;
  const r = b.n * a.d;
  return l < r ? -1 : l > r ? 1 : 0;
};

const format = (x: Rational): string => (x.d === 1n ? String(x.n) : `${x.n}/${x.d}`);
const bitsOf = (x: bigint): number => abs(x).toString(2).length;

/** One evaluation: the expression, its case's values and how messages name them. */
class Evaluation {
  constructor(
    private readonly text: string,
    private readonly names: readonly string[],
    private readonly values: ReadonlyMap<string, Rational>,
    private readonly label: string,
  ) {}

  /** 'the dimension expression 'n / 3'' or 'job.grid[0] ('n / 3')', and the case's values it used. */
  subject(): string {
    const text = this.text.length > 80 ? `${shown(this.text.slice(0, 80))}…` : shown(this.text);
    return this.label === DEFAULT_LABEL ? `${this.label} '${text}'` : `${this.label} ('${text}')`;
  }

  withValues(): string {
    if (this.names.length === 0) return '';
    return ` with ${this.names.map((name) => `${name} = ${format(this.values.get(name)!)}`).join(', ')}`;
  }

  fail(expected: string, received: string, at?: number): RangeError {
    const column = at === undefined ? '' : ` at column ${at + 1}`;
    return new RangeError(
      `Expected ${expected} for ${this.subject()} but received ${received}${column}${this.withValues()}`,
    );
  }

  /** `x`, once its numerator and denominator are known to stay below 2^maxBits. */
  private bounded(x: Rational, at: number): Rational {
    if (abs(x.n) < BIT_LIMIT && x.d < BIT_LIMIT) return x;
    const received =
      abs(x.n) >= BIT_LIMIT ? `a value of ${bitsOf(x.n)} bits` : `a fraction whose denominator has ${bitsOf(x.d)} bits`;
    throw this.fail(`values below 2^${DIM_EXPR_LIMITS.maxBits} in magnitude`, received, at);
  }

  private divisor(x: Rational, at: number): Rational {
    if (x.n === 0n) throw this.fail('a non-zero divisor', '0', at);
    return x;
  }

  value(node: Node): Rational {
    switch (node.kind) {
      case 'int':
        return { n: node.value, d: 1n };
      case 'name':
        return this.values.get(node.name)!;
      case 'neg': {
        const x = this.value(node.operand);
        return { n: -x.n, d: x.d };
      }
      case 'op':
        return this.bounded(this.binary(node.op, this.value(node.left), this.value(node.right), node), node.at);
      case 'call':
        return this.bounded(
          this.call(
            node.fn,
            node.args.map((arg) => this.value(arg)),
            node.at,
          ),
          node.at,
        );
    }
  }

  private binary(op: BinaryOp, a: Rational, b: Rational, node: Node): Rational {
    switch (op) {
      case '+':
        return rational(a.n * b.d + b.n * a.d, a.d * b.d);
      case '-':
        return rational(a.n * b.d - b.n * a.d, a.d * b.d);
      case '*':
        return rational(a.n * b.n, a.d * b.d);
      case '/':
        this.divisor(b, node.at);
        return rational(a.n * b.d, a.d * b.n);
      case '%': {
        this.divisor(b, node.at);
        const q = floorOf(rational(a.n * b.d, a.d * b.n));
        return rational(a.n * b.d - q * b.n * a.d, a.d * b.d);
      }
      case '<<': {
        const max = DIM_EXPR_LIMITS.maxShift;
        if (b.d !== 1n || b.n < 0n || b.n > BigInt(max)) {
          throw this.fail(`a shift amount that is an integer in [0, ${max}]`, format(b), node.at);
        }
        return rational(a.n << b.n, a.d);
      }
    }
  }

  private call(fn: Fn, args: Rational[], at: number): Rational {
    switch (fn) {
      case 'ceil':
        return { n: -floorOf({ n: -args[0]!.n, d: args[0]!.d }), d: 1n };
      case 'floor':
        return { n: floorOf(args[0]!), d: 1n };
      case 'min':
        return args.reduce((a, b) => (compare(b, a) < 0 ? b : a));
      case 'max':
        return args.reduce((a, b) => (compare(b, a) > 0 ? b : a));
      case 'cdiv': {
        const [a, b] = [args[0]!, this.divisor(args[1]!, at)];
        const q = rational(-a.n * b.d, a.d * b.n);
        return { n: -floorOf(q), d: 1n };
      }
    }
  }
}

/** The tree of `expr`: its own, or that of its text parsed again (a copy, or text given directly). */
function treeOf(expr: unknown, label: string): { expr: DimExpr; root: Node } {
  if (typeof expr === 'object' && expr !== null && !Array.isArray(expr)) {
    const root = trees.get(expr as DimExpr);
    if (root !== undefined) return { expr: expr as DimExpr, root };
    const text = (expr as { text?: unknown }).text;
    if (typeof text !== 'string') throw typeError(label, 'a DimExpr from parseDimExpr(), or its text', expr);
    expr = text;
  }
  const parsed = parseDimExpr(expr as string | number, label);
  return { expr: parsed, root: trees.get(parsed)! };
}

/** The range a value must fall in, and how a message words it. */
function bounds(o: Partial<Record<'label' | 'min' | 'max', unknown>>): { min: number; max: number; what: string } {
  const safe = Number.MAX_SAFE_INTEGER;
  const min = o.min === undefined ? -safe : checkInt('options.min', o.min, -safe, safe);
  const max = o.max === undefined ? safe : checkInt('options.max', o.max, min, safe);
  const what =
    max === safe && min === -safe
      ? `a safe integer (at most 2^53 - 1 in magnitude)`
      : max === safe && min === 0
        ? 'a non-negative integer'
        : max === safe && min === 1
          ? 'a positive integer'
          : `an integer in [${min}, ${max}]`;
  return { min, max, what };
}

/**
 * The value of a dimension expression for one case of a problem: `evalDimExpr('ceil(n / 256)', { n: 1000 })` is 4.
 * Arithmetic is exact (BigInt rationals), so only the final value must be an integer; `ceil`, `floor` and `cdiv`
 * make one of a quotient. Every name the expression uses must be a dimension of `dims`, and its value a safe
 * integer (a number, or a bigint within that range); the dimensions it does not use are not looked at.
 *
 * @param expr An expression from {@link parseDimExpr}, or its text (parsed here, as parseDimExpr() does).
 * @param dims The case's dimension values by name: `{ m: 4096, n: 4096, k: 4096 }`. Only own properties count.
 * @param options How messages name the expression (`label`), and the range the value must fall in (`min`, `max`).
 * @returns The value, a safe integer within [`min`, `max`].
 * @throws TypeError when `dims` is not an object, a value of it is not a number or bigint, or the expression uses a
 *   name `dims` does not have (the message lists those it has); and as parseDimExpr() for text.
 * @throws RangeError, naming the expression, the column and the case's values it used: for a division (or `%`,
 *   `cdiv`) by zero, a shift amount outside [0, {@link DIM_EXPR_LIMITS}.maxShift], an intermediate value past
 *   2^maxBits, a final value that is not an integer ('1000/3'), not a safe integer, or outside [`min`, `max`]; for a
 *   value of `dims` that is not a safe integer; and as parseDimExpr() for text.
 * @example evalDimExpr('ceil(n / 256)', { n: 1 << 20 }) // 4096
 * @example evalDimExpr('n - 300', { n: 256 }, { label: 'job.grid[0]', min: 1 })
 * // RangeError: Expected a positive integer for job.grid[0] ('n - 300') but received -44 with n = 256
 */
export function evalDimExpr(
  expr: DimExpr | string | number,
  dims: Readonly<Record<string, number | bigint>>,
  options?: DimEvalOptions,
): number {
  const o = checkOptions('options', options, ['label', 'min', 'max']);
  if (o.label !== undefined && typeof o.label !== 'string') throw typeError('options.label', 'a string', o.label);
  const label = o.label ?? DEFAULT_LABEL;
  const { min, max, what } = bounds(o);
  const { expr: parsed, root } = treeOf(expr, label);
  const record = checkObject('dims', dims);
  const values = new Map<string, Rational>();
  for (const name of parsed.names) {
    if (!Object.hasOwn(record, name)) {
      const known = Object.keys(record);
      throw new TypeError(
        `Unknown dimension '${name}' in ${new Evaluation(parsed.text, [], values, label).subject()}; ` +
          `known dimensions: ${known.length === 0 ? 'none' : known.join(', ')}`,
      );
    }
    const v = record[name];
    if (typeof v !== 'number' && typeof v !== 'bigint') throw typeError(`dims.${name}`, 'a safe integer', v);
    if (typeof v === 'number' ? !Number.isSafeInteger(v) : abs(v) > MAX_SAFE) {
      throw rangeError(`dims.${name}`, 'a safe integer', v);
    }
    values.set(name, { n: BigInt(v), d: 1n });
  }
  const evaluation = new Evaluation(parsed.text, parsed.names, values, label);
  const x = evaluation.value(root);
  if (x.d !== 1n) throw evaluation.fail('an integer (round the quotient with ceil() or floor())', format(x));
  if (abs(x.n) > MAX_SAFE || x.n < BigInt(min) || x.n > BigInt(max)) throw evaluation.fail(what, format(x));
  return Number(x.n);
}
