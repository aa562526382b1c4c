"""Server-rendered story pages (templates/projects/). Views call selectors to read and services
to write; the pipeline's pages live in pipeline/web/views/."""
