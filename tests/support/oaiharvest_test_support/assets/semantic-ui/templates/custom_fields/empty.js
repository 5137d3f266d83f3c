// invenio-communities imports custom field widgets from here; this instance has none.
export default null;
