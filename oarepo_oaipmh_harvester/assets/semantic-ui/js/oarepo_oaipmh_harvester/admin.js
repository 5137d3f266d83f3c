// The "Run now" action of the harvester pages: after the run is queued, say so and link to it
// (invenio-administration closes the form without a word). Loaded before the panel's own
// bundle, so that the override is in the store when the page renders.
import React, { useState } from "react";
import PropTypes from "prop-types";
import { overrideStore } from "react-overridable";
import { Button, Message, Modal } from "semantic-ui-react";
import { ActionForm } from "@js/invenio_administration";

export const RunNowForm = ({ actionSuccessCallback, ...props }) => {
  const [run, setRun] = useState(null);
  if (run === null) {
    return <ActionForm {...props} actionSuccessCallback={(data) => setRun(data)} />;
  }
  const runLink = run?.links?.self_html;
  return (
    <>
      <Modal.Content>
        <Message positive id="oai-harvester-run-queued">
          <Message.Header>
            {run.status === "QUEUED" ? "The run is queued." : `The run is ${run.status}.`}
          </Message.Header>
          <p>
            {run.title || "Run now"}
            {runLink && (
              <>
                {" "}
                &middot; <a href={runLink}>Open the run</a>
              </>
            )}
          </p>
        </Message>
      </Modal.Content>
      <Modal.Actions>
        <Button primary onClick={() => actionSuccessCallback(run)}>
          Close
        </Button>
      </Modal.Actions>
    </>
  );
};

RunNowForm.propTypes = {
  actionSuccessCallback: PropTypes.func.isRequired,
};

overrideStore.add("InvenioAdministration.ResourceActions.ModalBody.run", RunNowForm);
overrideStore.add("InvenioAdministration.ResourceActions.ModalBody.reharvest", RunNowForm);
