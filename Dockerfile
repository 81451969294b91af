# The Kortyx worker image: one static binary for both roles (worker, and worker --api-only).
#
#   docker build -t kortyx:local .
#
# Build stage: the module's Go version; CGO off, so the binary runs on a distroless base.
FROM golang:1.26.8-alpine AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# KORTYX_BUILD_TAGS=kortyx_openaionly builds a worker that links the OpenAI wire alone (no
# Anthropic or Google SDK; docs/running.md, "Providers linked").
ARG KORTYX_BUILD_TAGS=""
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -tags "$KORTYX_BUILD_TAGS" -ldflags="-s -w" -o /out/kortyx-worker ./worker

# Run stage: no shell, no package manager, a non-root user (uid 65532). Healthchecks use the
# binary itself: kortyx-worker --probe http://127.0.0.1:8080/readyz.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/kortyx-worker /usr/local/bin/kortyx-worker
USER nonroot:nonroot
WORKDIR /home/nonroot
ENV KORTYX_LOG_FORMAT=json
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/kortyx-worker"]
