// placeholder: implemented by the model/topology work
