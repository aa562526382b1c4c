"""The pipeline's web pages (views/, urls) and REST API (api, api_urls), with their reads
(selectors) and the pipeline's codes in human words (labels)."""
