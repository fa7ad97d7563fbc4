mod raml;
