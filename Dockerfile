# Installs the project exactly as the README does (make install into .venv) and runs the demo.
FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends make && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
RUN make install
ENV PATH="/app/.venv/bin:${PATH}"
CMD ["make", "run"]
