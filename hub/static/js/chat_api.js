// The chat page's calls to the hub's JSON API: JSON requests with the session's CSRF token, refusals turned into
// words, and a reader for the server-sent events of a streamed reply (fetch + ReadableStream, no EventSource: the
// reply is the answer to a POST).

export class ApiError extends Error {
  constructor(message, status, field) {
    super(message);
    this.status = status;
    this.field = field || null;
  }
}

let csrfToken = "";

export function setCsrfToken(token) {
  csrfToken = token || "";
}

function headers(extra) {
  return { "X-CSRF-Token": csrfToken, ...(extra || {}) };
}

const STATUS_WORDS = {
  400: "the request was not understood",
  401: "you are not signed in to this study any more (open your invite link again)",
  403: "this is not allowed",
  404: "not found",
  409: "this conflicts with what changed meanwhile (reload the page)",
  413: "too large",
  422: "not accepted",
  429: "too many requests; wait a moment",
  502: "the hub cannot reach the system",
  503: "the hub is busy; try again in a moment",
  504: "the system took too long to answer",
};

function fieldWords(field) {
  return field ? String(field).replace(/_/g, " ") + ": " : "";
}

// A refusal in words: the hub's {"error", "field"}, FastAPI's {"detail": [...]}, or the status alone.
export function refusalText(status, body) {
  if (body && typeof body.error === "string") return fieldWords(body.field) + body.error;
  if (body && Array.isArray(body.detail) && body.detail.length) {
    return body.detail
      .map((d) => {
        const where = d.field || (Array.isArray(d.loc) ? d.loc[d.loc.length - 1] : "");
        const line = d.line ? ` (line ${d.line})` : "";
        return fieldWords(where) + (d.message || d.msg || "not accepted") + line;
      })
      .join("; ");
  }
  if (body && typeof body.detail === "string") return body.detail;
  return STATUS_WORDS[status] || `the hub answered with status ${status}`;
}

async function readBody(response) {
  const text = await response.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch (_) {
    return null;
  }
}

async function send(method, url, body) {
  let response;
  try {
    response = await fetch(url, {
      method,
      credentials: "same-origin",
      headers: headers(body instanceof FormData ? { Accept: "application/json" } : {
        Accept: "application/json",
        "Content-Type": "application/json",
      }),
      body: body === undefined ? undefined : body instanceof FormData ? body : JSON.stringify(body),
    });
  } catch (error) {
    throw new ApiError(`the hub could not be reached (${error.message || "network error"})`, 0);
  }
  const data = await readBody(response);
  if (!response.ok) throw new ApiError(refusalText(response.status, data), response.status, data && data.field);
  return data;
}

export const getJson = (url) => send("GET", url);
export const postJson = (url, body) => send("POST", url, body === undefined ? {} : body);
export const putJson = (url, body) => send("PUT", url, body);
export const postForm = (url, form) => send("POST", url, form);

// POST `body` and read the answer as server-sent events; `onEvent(name, data)` for each one. Resolves with the
// name of the last event; an answer that is not a stream (a refusal) rejects with an ApiError in words.
export async function postStream(url, body, onEvent, signal) {
  let response;
  try {
    response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      signal,
      headers: headers({ Accept: "text/event-stream", "Content-Type": "application/json" }),
      body: JSON.stringify(body || {}),
    });
  } catch (error) {
    throw new ApiError(`the hub could not be reached (${error.message || "network error"})`, 0);
  }
  const type = response.headers.get("content-type") || "";
  if (!response.ok || !type.startsWith("text/event-stream")) {
    const data = await readBody(response);
    if (response.ok) {
      // A server that answered in one piece: hand it over as a finished message.
      onEvent("done", data && data.message ? data : { message: data });
      return "done";
    }
    throw new ApiError(refusalText(response.status, data), response.status, data && data.field);
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let last = null;
  const dispatch = (block) => {
    let name = "message";
    const lines = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith(":")) continue; // a comment: keep-alive
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "event") name = value;
      else if (field === "data") lines.push(value);
    }
    if (!lines.length) return;
    let data = lines.join("\n");
    try {
      data = JSON.parse(data);
    } catch (_) {
      /* plain text data stays text */
    }
    last = name;
    onEvent(name, data);
  };
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch (error) {
      throw new ApiError(`the connection to the hub broke off (${error.message || "network error"})`, 0);
    }
    if (chunk.done) break;
    buffer += decoder.decode(chunk.value, { stream: true });
    let end;
    while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const match = buffer.slice(end).match(/^\r?\n\r?\n/);
      dispatch(buffer.slice(0, end));
      buffer = buffer.slice(end + match[0].length);
    }
  }
  buffer += decoder.decode();
  if (buffer.trim()) dispatch(buffer);
  return last;
}
