// Starts the vendored Swagger UI on the hub's OpenAPI document (/docs). A file of its own: the strict
// Content-Security-Policy allows no inline script.
"use strict";

window.addEventListener("DOMContentLoaded", () => {
  window.ui = window.SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    layout: "BaseLayout",
    deepLinking: true,
    showExtensions: true,
    showCommonExtensions: true,
    validatorUrl: null, // no badge from validator.swagger.io: nothing leaves the hub
    presets: [window.SwaggerUIBundle.presets.apis],
  });
});
